/* tutti-info --explain: what the tuner would pick for one call, and why. */
#ifndef TUTTI_INFO_EXPLAIN_H
#define TUTTI_INFO_EXPLAIN_H

/* argv: COLLECTIVE SIZE NRANKS [shm|tcp]. Returns the exit status. */
int tutti_info_explain(int argc, char **argv);

struct tutti_model;
/* Prints a model's measured quantities and where they came from. */
void tutti_info_print_model(const struct tutti_model *m);

#endif
