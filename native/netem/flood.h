#ifndef SECPERF_NETEM_FLOOD_H
#define SECPERF_NETEM_FLOOD_H
int flood_main(int argc, char **argv);
#endif
