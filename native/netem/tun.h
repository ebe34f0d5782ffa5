/* tun: a TUN device created inside a named network namespace (setns there, create, come back). */
#ifndef SECPERF_NETEM_TUN_H
#define SECPERF_NETEM_TUN_H

/* returns a non-blocking TUN fd (IFF_TUN | IFF_NO_PI) or -1 with err filled */
int tun_open_in_netns(const char *netns_path, const char *ifname, char *err, int errlen);

#endif
