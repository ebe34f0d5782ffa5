/* CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: a small function to count on an
 * emulated core with `secperf device crypto --source crc32.c --entry crc32_bitwise`. The result
 * equals zlib's crc32(). */
#include <stddef.h>
#include <stdint.h>

uint32_t crc32_bitwise(const uint8_t *data, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
