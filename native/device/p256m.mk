# p256-m (stack p256m): the minimal P-256 implementation Mbed TLS 3.6 ships as 3rdparty/p256-m
# (P256M_SRC: its directory in the mbedtls-rs-sys crate's sources, unpacked by scripts/bootstrap),
# compiled for the target at MCU_OPT (the configuration's; -Os by default, as its author measured it)
# into libp256m.a; the client (be_p256m.c) has no TLS. Included by native/device/Makefile; the
# Cortex-M0+ build links with newlib and m0/sys.c like the other M0+ clients.
P256M_SRC ?= p256m-src
# Mbed TLS's copy is compiled under its driver switch, against Mbed TLS's headers (default configuration)
P256M_DEFS = -DMBEDTLS_PSA_P256M_DRIVER_ENABLED -I$(P256M_SRC) -I$(P256M_SRC)/../../../include
P256M_CFLAGS = -g0 -std=c99 -w $(MCU_FLAGS) -ffunction-sections -fdata-sections $(MCU_DEFS) $(MCU_OPT) $(P256M_DEFS)

# The configuration p256m-2020-os (MCU_DEFS naming SECPERF_P256M_ROLLED_MULADD): the code as its author
# measured it for the README's timings (2020), whose u288_muladd was a loop; the unrolled body for
# cores with a one-instruction multiply-accumulate (MULADD64_SMALL: UMAAL on the M4 and the A cores)
# came in 2022. The shipped file is compiled with that one #if turned off (a copy in the build
# directory); everything else is the shipped code.
ifneq ($(findstring SECPERF_P256M_ROLLED_MULADD,$(MCU_DEFS)),)
P256M_C := $(MCU)/p256m-src/p256-m.c
$(P256M_C): $(P256M_SRC)/p256-m.c $(SRC)p256m.mk
	@mkdir -p $(dir $@)
	sed 's|^#if defined(MULADD64_SMALL)$$|#if 0 /* secperf p256m-2020-os: the loop of 2020 */|' $< > $@
	grep -q 'secperf p256m-2020-os' $@
else
P256M_C := $(P256M_SRC)/p256-m.c
endif

$(MCU)/p256m/p256-m.o: $(P256M_C) $(P256M_SRC)/p256-m.h $(SRC)p256m.mk
	@mkdir -p $(dir $@)
	$(CROSS)gcc $(P256M_CFLAGS) -c -o $@ $<
	$(OBJCOPY) $(NOATTR) $@

$(MCU)/libp256m.a: $(MCU)/p256m/p256-m.o
	rm -f $@ && $(CROSS)ar rcs $@ $^

P256M_CLIENT_O := $(addprefix $(OUT)/mcu-p256m-client/,client.o recio.o marker.o stackpaint.o opts.o json.o be_p256m.o crypto_only.o)
$(OUT)/mcu-p256m-client/%.o: $(SRC)%.c $(SRC)*.h
	@mkdir -p $(dir $@)
	$(CROSS)gcc $(MCU_CFLAGS) -I$(P256M_SRC) -I$(SRC) -I$(COMMON_DIR) -c -o $@ $<
	$(OBJCOPY) $(NOATTR) $@

.PHONY: mcu-p256m m0-p256m
mcu-p256m: $(OUT)/sp-device-p256m-src
$(OUT)/sp-device-p256m-src: $(P256M_CLIENT_O) $(MCU)/libp256m.a
	$(CROSS)gcc $(MCU_FLAGS) -static -Wl,--gc-sections -Wl,-Map=$@.map -o $@ $^ -lm

# Cortex-M0+ (newlib): p256-m's Thumb-1 inline assembly for the 32x32->64 multiply
$(MCU)/m0-p256m/p256-m.o: $(P256M_C) $(P256M_SRC)/p256-m.h $(SRC)p256m.mk
	@mkdir -p $(dir $@)
	$(M0_CROSS)gcc $(M0_LIB_CFLAGS) -std=c99 $(P256M_DEFS) -c -o $@ $<

$(MCU)/m0/libp256m.a: $(MCU)/m0-p256m/p256-m.o
	@mkdir -p $(dir $@)
	rm -f $@ && $(M0_CROSS)ar rcs $@ $^

$(OUT)/m0-p256m-client/%.o: $(SRC)%.c $(SRC)*.h
	@mkdir -p $(dir $@)
	$(M0_CROSS)gcc $(M0_CFLAGS) -I$(P256M_SRC) -I$(SRC) -I$(COMMON_DIR) -c -o $@ $<

m0-p256m: $(OUT)/sp-device-p256m-m0
$(OUT)/sp-device-p256m-m0: $(addprefix $(OUT)/m0-p256m-client/,client.o recio.o marker.o stackpaint.o opts.o json.o be_p256m.o crypto_only.o sys.o) \
                           $(MCU)/m0/libp256m.a
	$(M0_CROSS)gcc $(M0_LDFLAGS) -o $@ $^ -lm
