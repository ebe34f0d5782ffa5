/* Mbed TLS's bare-metal hooks on the Cortex-M0+ build (m0/mbedtls/mbedtls_user_config.h): the
 * entropy source a microcontroller's TRNG would be (here the host's /dev/urandom, read through
 * qemu-user), the millisecond clock, and directory calls that always fail (m0/include/dirent.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/version.h>
#if MBEDTLS_VERSION_MAJOR >= 3
#include <mbedtls/platform_time.h>
#endif

int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen)
{
    (void)data;
    *olen = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0)
        return -1;
    while (*olen < len) {
        int r = read(fd, output + *olen, len - *olen);
        if (r <= 0)
            break;
        *olen += (size_t)r;
    }
    close(fd);
    return *olen == len ? 0 : -1;
}

#if MBEDTLS_VERSION_MAJOR >= 3
mbedtls_ms_time_t mbedtls_ms_time(void)
{
    struct timespec ts;
    clock_gettime(1 /* CLOCK_MONOTONIC */, &ts);
    return (mbedtls_ms_time_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif

DIR *opendir(const char *path)
{
    (void)path;
    errno = ENOSYS;
    return NULL;
}

struct dirent *readdir(DIR *dir)
{
    (void)dir;
    return NULL;
}

int closedir(DIR *dir)
{
    (void)dir;
    return -1;
}
