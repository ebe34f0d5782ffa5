#ifndef SECPERF_NETEM_FLOOD_H
#define SECPERF_NETEM_FLOOD_H
/* argv[0] is "flood"; options follow. Returns the exit code. */
int flood_main(int argc, char **argv);
#endif
