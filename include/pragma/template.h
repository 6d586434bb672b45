/* Prompt templates (the .md files under prompts/): {{name}} is replaced by the variable's
 * text; {{#name}} ... {{/name}} keeps its body only when the variable is set
 * and not empty (or true); {{^name}} ... {{/name}} only when it is not.
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
