/* Internals of lib/agents shared between its files. */
#ifndef PRAGMA_AGENTS_PRIV_H
#define PRAGMA_AGENTS_PRIV_H

#include "pragma/buf.h"
#include "pragma/machine.h"
#include "pragma/task.h"
#include "pragma/timing.h"

void agents_io_table(const struct pragma_task *t, struct pragma_buf *out);
void agents_machine_text(const struct pragma_machine *m, struct pragma_buf *out);
void agents_baseline_text(const struct pragma_task *t, const struct pragma_baseline *b, struct pragma_buf *out);
void agents_work_text(const struct pragma_task *t, const struct pragma_machine *m, const struct pragma_baseline *b,
		      struct pragma_buf *out);

#endif
