/* m0_net: the socket declarations the guest client needs on the Cortex-M0+ build, where the C
 * library is newlib (no sockets). Constants and structures are Linux's (ARM EABI), because the
 * calls go straight to qemu-user's Linux system calls (m0/sys.c). Used by the M0+ build only. */
#ifndef SP_M0_NET_H
#define SP_M0_NET_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/time.h>

typedef uint32_t socklen_t;
typedef uint16_t sa_family_t;
typedef uint16_t in_port_t;
typedef uint32_t in_addr_t;

struct sockaddr { sa_family_t sa_family; char sa_data[14]; };
struct in_addr { in_addr_t s_addr; };
struct sockaddr_in {
    sa_family_t sin_family;
    in_port_t sin_port;
    struct in_addr sin_addr;
    unsigned char sin_zero[8];
};

#define AF_INET 2
#define PF_INET AF_INET
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define SOL_SOCKET 1
#define SO_RCVTIMEO 20
#define SO_SNDTIMEO 21
#define IPPROTO_IP 0
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define TCP_NODELAY 1
#define MSG_PEEK 0x2
#define MSG_DONTWAIT 0x40
#define MSG_NOSIGNAL 0x4000
#define INADDR_ANY ((in_addr_t)0)

int socket(int domain, int type, int protocol);
int connect(int fd, const struct sockaddr *addr, socklen_t len);
int setsockopt(int fd, int level, int name, const void *val, socklen_t len);
ssize_t send(int fd, const void *buf, size_t len, int flags);
ssize_t recv(int fd, void *buf, size_t len, int flags);
ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen);
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen);
int shutdown(int fd, int how);
int inet_pton(int af, const char *src, void *dst);

static inline uint16_t htons(uint16_t v) { return (uint16_t)((v << 8) | (v >> 8)); }
static inline uint16_t ntohs(uint16_t v) { return htons(v); }
static inline uint32_t htonl(uint32_t v) { return __builtin_bswap32(v); }
static inline uint32_t ntohl(uint32_t v) { return __builtin_bswap32(v); }

#endif
