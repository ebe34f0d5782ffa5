/* tun: a TUN device created inside a named network namespace (setns there, create, come back). */
#ifndef SECPERF_NETEM_TUN_H
#define SECPERF_NETEM_TUN_H

/* the TUN input queue (kernel txqueuelen) the relay sets, in packets */
#define TUN_TXQUEUELEN 4096

/* returns a non-blocking TUN fd (IFF_TUN | IFF_NO_PI) opened from tun_device (normally /dev/net/tun;
 * any character node 10:200 works) with the given input queue length (0 keeps the kernel's default)
 * or -1 with err filled */
int tun_open_in_netns(const char *netns_path, const char *tun_device, const char *ifname, int txqueuelen, char *err, int errlen);

#endif
