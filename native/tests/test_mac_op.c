/* The MAC operation names of the device crypto clients (device/mac_op.h): the kind and length of a
 * well-formed name, and every malformed length refused rather than read as its leading digits. */
#include "../device/mac_op.h"
#include "harness.h"

static void cmac_and_hmac_names_give_their_kind_and_length(void)
{
    unsigned n = 0;
    CHECK(sp_mac_op("aes-128-cmac-16", 1024, &n) == SP_MAC_CMAC && n == 16);
    CHECK(sp_mac_op("hmac-sha256-1024", 1024, &n) == SP_MAC_HMAC && n == 1024);
    CHECK(sp_mac_op("aes-128-cmac-1", 1024, &n) == SP_MAC_CMAC && n == 1);
}

static void other_operations_are_not_macs(void)
{
    unsigned n = 7;
    CHECK(sp_mac_op("aes-128-gcm-1024", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("sha256-1024", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("", 1024, &n) == SP_MAC_NONE);
    CHECK(n == 7);
}

static void trailing_characters_and_missing_digits_are_refused(void)
{
    unsigned n = 7;
    CHECK(sp_mac_op("aes-128-cmac-12x", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256-", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256-16 ", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256- 16", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256-+16", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("aes-128-cmac-0x10", 1024, &n) == SP_MAC_NONE);
    CHECK(n == 7);
}

static void lengths_outside_one_to_max_and_overflow_are_refused(void)
{
    unsigned n = 7;
    CHECK(sp_mac_op("aes-128-cmac-0", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("aes-128-cmac-1025", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256--1", 1024, &n) == SP_MAC_NONE);
    /* 2^32 + 16 (would read as 16 through an unsigned cast) and a number past unsigned long */
    CHECK(sp_mac_op("hmac-sha256-4294967312", 1024, &n) == SP_MAC_NONE);
    CHECK(sp_mac_op("hmac-sha256-184467440737095516160016", 1024, &n) == SP_MAC_NONE);
    CHECK(n == 7);
}

const test_case mac_op_tests[] = {
    {"mac_op: CMAC and HMAC names give their kind and length", cmac_and_hmac_names_give_their_kind_and_length},
    {"mac_op: other operation names are not MACs", other_operations_are_not_macs},
    {"mac_op: trailing characters, signs, spaces and missing digits are refused",
     trailing_characters_and_missing_digits_are_refused},
    {"mac_op: lengths of 0, above the maximum, negative or overflowing are refused",
     lengths_outside_one_to_max_and_overflow_are_refused},
    {NULL, NULL},
};
