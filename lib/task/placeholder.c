/* replaced by task.c */
int pragma_placeholder_task(void);
int pragma_placeholder_task(void) { return 0; }
