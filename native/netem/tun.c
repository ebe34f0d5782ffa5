#include "tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tun_open_in_netns(const char *netns_path, const char *ifname, char *err, int errlen)
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
    fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open /dev/net/tun: %s (load the tun module: modprobe tun; "
                 "without root, /dev/net/tun must be accessible)", strerror(errno));
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
