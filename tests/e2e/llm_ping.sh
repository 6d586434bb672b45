#!/bin/bash
# pragma llm ping/ask/config/prices/cache against the fake server, as a user would.
. "$PRAGMA_TEST_DATA/e2e/lib.bash"
unset PRAGMA_LLM PRAGMA_LLM_BASE_URL PRAGMA_LLM_API_KEY OPENAI_API_KEY ANTHROPIC_API_KEY
T=$(mktemp -d /tmp/pragma-e2e-llm-XXXXXX)
cat >"$T/script.json" <<'JSON'
{"model": "fake-model", "require_key": "test-key",
 "replies": {"ping": ["pong", "pong", {"text": "pong", "reasoning": "one word", "usage": {"prompt": 12, "completion": 3, "reasoning": 2}}]},
 "faults": [{"agent": "ping", "n": 2, "kind": "503"}]}
JSON

expect_exit 3 "no model configured" -- $PRAGMA llm ping
grep_err "the hint names --llm and PRAGMA_LLM" "Hint: pass --llm.*PRAGMA_LLM"

start_fake_llm "$T/script.json" 120
expect_exit 0 "ping openai (streaming)" -- $PRAGMA llm ping --llm openai:fake-model
out | grep -q "^reply     pong" && ok "the reply is shown" || bad "no reply line: $(out)"
out | grep -q "^latency" && out | grep -q "prompt + .* completion tokens" && ok "latency and usage shown" || bad "$(out)"
$PY -c "import json; e=[json.loads(l) for l in open('$FAKE_LOG')][-1]; assert e['headers']['x-pragma-agent']=='ping' and e['headers']['authorization']=='Bearer test-key'" \
	&& ok "X-Pragma-Agent and the key were sent" || bad "request headers"

expect_exit 0 "ping retries a 503" -- $PRAGMA llm ping --llm openai:fake-model --no-stream --json
jcheck "one retry, then pong" "j['retries'] == 1 and j['text'] == 'pong' and j['status'] == 'ok'"

expect_exit 0 "ping anthropic --json" -- env PRAGMA_LLM_BASE_URL=http://127.0.0.1:$FAKE_PORT \
	$PRAGMA llm ping --llm anthropic:fake-model --json
jcheck "anthropic: text, usage, reasoning apart" \
	"j['provider'] == 'anthropic' and j['text'] == 'pong' and j['reasoning'] == 'one word' and j['prompt_tokens'] == 12 and j['completion_tokens'] == 3"

expect_exit 3 "a wrong key fails" -- env PRAGMA_LLM_API_KEY=wrong $PRAGMA llm ping --llm openai:fake-model --retries 0
grep_err "401 is reported" "HTTP 401"
grep_err "the hint names the variable and the base URL" "Hint: .*PRAGMA_LLM_API_KEY.*127.0.0.1:$FAKE_PORT"

expect_exit 0 "40 pings, 8 at once" -- $PRAGMA llm ping --llm openai:fake-model --count 40 --parallel 8 --json
jcheck "all answered, totals equal the replies" \
	"j['answered'] == 40 and j['usage']['calls'] == 40 and j['usage']['prompt_tokens'] == j['reply_sums']['prompt_tokens']"

expect_exit 3 "nothing listening" -- $PRAGMA llm ping --llm openai:x --base-url http://127.0.0.1:9/v1 --retries 1 --backoff-ms 1
grep_err "connection refused says so" "is unreachable: connection refused"

# ask, with the cache: the second identical question never reaches the server.
n0=$(wc -l <"$FAKE_LOG")
expect_exit 0 "ask" -- $PRAGMA llm ask --llm openai:fake-model --agent coder "hello there"
out | grep -q "fake reply" && ok "ask prints the reply" || bad "ask printed $(out)"
expect_exit 0 "ask again" -- $PRAGMA llm ask --llm openai:fake-model --agent coder --json "hello there"
jcheck "the second answer came from the cache" "j['cached'] is True and j['cost'] == 0"
n1=$(wc -l <"$FAKE_LOG")
[ $((n1 - n0)) = 1 ] && ok "one request reached the server" || bad "$((n1 - n0)) requests reached the server"
expect_exit 0 "cache info" -- $PRAGMA llm cache info --json
jcheck "the cache holds the answer" "j['entries'] >= 1"
expect_exit 0 "cache clear" -- $PRAGMA llm cache clear
expect_exit 0 "ask --no-cache" -- $PRAGMA llm ask --llm openai:fake-model --agent coder --no-cache --json "hello there"
jcheck "--no-cache asks the model" "j['cached'] is False"

# Configuration: file < environment < flags.
mkdir -p "$XDG_CONFIG_HOME/pragma"
printf '[llm]\nspec = exec:cat\ntemperature = 0.4\nmax_tokens = 777\n' >"$XDG_CONFIG_HOME/pragma/config"
expect_exit 0 "config from the file" -- $PRAGMA llm config --json
jcheck "file values" "j['provider'] == 'exec' and j['temperature'] == 0.4 and j['max_tokens'] == 777"
expect_exit 0 "environment over the file" -- env PRAGMA_LLM_MAX_TOKENS=555 $PRAGMA llm config --json
jcheck "env value" "j['max_tokens'] == 555 and j['temperature'] == 0.4"
expect_exit 0 "flags over the environment" -- env PRAGMA_LLM_MAX_TOKENS=555 $PRAGMA llm config --max-tokens 333 --json
jcheck "flag value" "j['max_tokens'] == 333"
printf '[llm\n' >"$XDG_CONFIG_HOME/pragma/config"
expect_exit 2 "a broken config file is an input error" -- $PRAGMA llm config
grep_err "it names the file and line" "config:1"
rm -f "$XDG_CONFIG_HOME/pragma/config"
expect_exit 2 "a bad flag value" -- $PRAGMA llm ping --temperature hot
expect_exit 2 "an unknown subcommand" -- $PRAGMA llm frobnicate

expect_exit 0 "prices" -- $PRAGMA llm prices
out | grep -q "^gpt-4o\* " && ok "the built-in table lists gpt-4o" || bad "$(out | head -3)"
echo '{"fake-model": [1, 2]}' >"$T/prices.json"
expect_exit 0 "prices with an override" -- $PRAGMA llm prices --prices "$T/prices.json" --json
jcheck "the override is listed first" "j[0]['model'] == 'fake-model' and j[0]['output_per_mtok'] == 2"

expect_exit 0 "ask through exec" -- $PRAGMA llm ask --llm 'exec:echo "agent $PRAGMA_AGENT attempt $PRAGMA_ATTEMPT"' --agent conductor --attempt 3 --json hi
jcheck "exec: reply, estimated tokens" "j['text'] == 'agent conductor attempt 3' and j['estimated'] is True"
expect_exit 0 "llm --help" -- $PRAGMA llm --help
out | grep -q -- "--budget-calls" && ok "help lists the LLM flags" || bad "help"
rm -rf "$T"
finish
