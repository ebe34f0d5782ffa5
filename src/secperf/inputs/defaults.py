"""The defaults a command applies when an option is not given, in one light module: the command
parsers show them in their help (`secperf mac --help`) and the app layer applies them, so building
the parser never imports the app layer."""

from __future__ import annotations

from typing import TypedDict

# `secperf mac` and `secperf can` (study S4)
MAC_DEFAULT_ALGS = "chaskey,chaskey-12,hmac-sha256,aes-128-cmac,poly1305,siphash"
MAC_DEFAULT_SIZES = "8,16,64,256,1024"
CAN_DEFAULT_DEVICES = "rl78,rl78-small,rh850,cortex-m0,cortex-m3,cortex-m0-qemu,cortex-m3-qemu"
CAN_DEFAULT_MACS = "chaskey,chaskey-12,aes-128-cmac,hmac-sha256"


class DeviceDefaults(TypedDict):
    device: str
    stack: str
    tls: str
    group: str
    suite: str
    mode: str
    server_cert: str
    client_cert: str
    n: int
    warmup: int


# `secperf device handshake|crypto` and `secperf device build`
DEVICE_DEFAULTS: DeviceDefaults = {
    "device": "cortex-a9-400",
    "stack": "wolfssl",
    "tls": "1.3",
    "group": "x25519,p-256",
    "suite": "aes128gcm,chacha20",
    "mode": "full",
    "server_cert": "rsa-2048",
    "client_cert": "none",
    "n": 5,
    "warmup": 2,
}
DEVICE_BUILD_DEFAULTS = {"stack": "wolfssl,mbedtls,mbedtls3,wolfssl59", "target": "armhf,cortex-m4"}
