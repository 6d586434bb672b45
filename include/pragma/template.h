/* Prompt templates (the .md files under prompts/): {{name}} is replaced by the variable's
 * text; {{#name}} ... {{/name}} keeps its body only when the variable is set
 * and not empty (or true); {{^name}} ... {{/name}} only when it is not;
 * {{+}} is the next number, counted from 1 over what is rendered (a
 * heading "## {{+}}. Verdict" inside a section that is left out takes no
 * number, so the numbers shown are always 1, 2, 3, ...).
 * Unknown variables render empty. */
#ifndef PRAGMA_TEMPLATE_H
#define PRAGMA_TEMPLATE_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/err.h"

/* vars: a JSON object of strings (numbers are printed). */
int pragma_template_render(const char *tmpl, json_t *vars, struct pragma_buf *out, struct pragma_err *err);
/* Load prompts/<name> (from $PRAGMA_PROMPTS, else the data path) and render. */
int pragma_template_render_file(const char *name, json_t *vars, struct pragma_buf *out, struct pragma_err *err);

#endif
