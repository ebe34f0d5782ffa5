#include "tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int tun_open_in_netns(const char *netns_path, const char *tun_device, const char *ifname, int txqueuelen, char *err, int errlen)
{
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int target = open(netns_path, O_RDONLY | O_CLOEXEC);
    int fd = -1;
    if (self < 0 || target < 0) {
        snprintf(err, errlen, "cannot open network namespace %s: %s", netns_path, strerror(errno));
        goto out;
    }
    if (setns(target, CLONE_NEWNET) < 0) {
        snprintf(err, errlen, "cannot enter network namespace %s: %s (needs CAP_SYS_ADMIN: run as root)",
                 netns_path, strerror(errno));
        goto out;
    }
    fd = open(tun_device, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s (load the tun module: modprobe tun; "
                 "without root, the TUN device node must be accessible)", tun_device, strerror(errno));
    } else {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
        snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
        if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
            snprintf(err, errlen, "cannot create TUN device %s in %s: %s (needs CAP_NET_ADMIN)",
                     ifname, netns_path, strerror(errno));
            close(fd);
            fd = -1;
        } else if (txqueuelen > 0) {
            /* the kernel's queue between the sending stack and our read(): the default 500 packets
             * overflows in scheduling hiccups at 100k+ packets/s; a NIC ring of TUN_TXQUEUELEN is
             * the honest model (the emulated link's own queue is --queue, applied by the relay) */
            int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            ifr.ifr_qlen = txqueuelen;
            if (s < 0 || ioctl(s, SIOCSIFTXQLEN, &ifr) < 0) {
                snprintf(err, errlen, "cannot set the input queue of %s to %d packets: %s", ifname, txqueuelen,
                         strerror(errno));
                close(fd);
                fd = -1;
            }
            if (s >= 0)
                close(s);
        }
    }
    if (setns(self, CLONE_NEWNET) < 0 && fd >= 0) {
        snprintf(err, errlen, "cannot return to the original network namespace: %s", strerror(errno));
        close(fd);
        fd = -1;
    }
out:
    if (self >= 0) close(self);
    if (target >= 0) close(target);
    return fd;
}
