package main

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

func fill(buf []byte, state *uint64) {
	for i := range buf {
		x := *state
		if x == 0 {
			x = 0x9E3779B97F4A7C15
		}
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		*state = x
		buf[i] = byte((x * 2685821657736338717) >> 56)
	}
}

func setup(a *args) (*op, error) {
	seed := a.seed
	if seed == 0 {
		seed = 1
	}
	msg := make([]byte, a.size)
	fill(msg, &seed)
	key := make([]byte, 32)
	fill(key, &seed)
	iv := make([]byte, 12)
	fill(iv, &seed)
	aad := make([]byte, 13)
	fill(aad, &seed)

	hfunc, hid, hname := sha256.New, crypto.SHA256, "SHA-256"
	if a.hash == "sha1" {
		hfunc, hid, hname = sha1.New, crypto.SHA1, "SHA-1"
	}
	pre := hfunc()
	pre.Write(msg)
	prepared := pre.Sum(nil)
	digest := func() []byte {
		if a.prehashed {
			return prepared
		}
		h := hfunc()
		h.Write(msg)
		return h.Sum(nil)
	}
	hashing := "hash the message (" + hname + ")"
	if a.prehashed {
		hashing = "digest prepared (" + hname + ")"
	}
	alg, o := a.alg, a.op

	switch {
	case strings.HasPrefix(alg, "rsa-"):
		rest := strings.TrimPrefix(alg, "rsa-")
		variant := ""
		if i := strings.IndexByte(rest, '-'); i >= 0 {
			rest, variant = rest[:i], rest[i:]
		}
		bits, _ := strconv.Atoi(rest)
		if variant == "-nocrt" {
			return nil, unsupported(a, "crypto/rsa has no private operation without the CRT")
		}
		if variant != "" && variant != "-pss" {
			return nil, notImplemented(a)
		}
		if o == "keygen" {
			return &op{keyBits: bits, detail: fmt.Sprintf("rsa.GenerateKey(%d bits)", bits), run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := rsa.GenerateKey(rand.Reader, bits); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			return nil, unsupported(a, err.Error())
		}
		k.Precompute()
		pss := variant == "-pss"
		pssOpts := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: hid}
		sign := func() ([]byte, error) {
			if pss {
				return rsa.SignPSS(rand.Reader, k, hid, digest(), pssOpts)
			}
			return rsa.SignPKCS1v15(nil, k, hid, digest())
		}
		sig, err := sign()
		if err != nil {
			return nil, err
		}
		switch o {
		case "sign":
			name := "rsa.SignPKCS1v15"
			if pss {
				name = "rsa.SignPSS"
			}
			return &op{keyBits: bits, detail: hashing + " + " + name + " (CRT)", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := sign(); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		case "verify":
			name := "rsa.VerifyPKCS1v15"
			if pss {
				name = "rsa.VerifyPSS"
			}
			return &op{keyBits: bits, detail: hashing + " + " + name, run: func(c int) error {
				for i := 0; i < c; i++ {
					var err error
					if pss {
						err = rsa.VerifyPSS(&k.PublicKey, hid, digest(), sig, pssOpts)
					} else {
						err = rsa.VerifyPKCS1v15(&k.PublicKey, hid, digest(), sig)
					}
					if err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		return nil, notImplemented(a)

	case strings.HasPrefix(alg, "ecdsa-"):
		curves := map[string]elliptic.Curve{"secp224r1": elliptic.P224(), "p256": elliptic.P256(),
			"p384": elliptic.P384(), "p521": elliptic.P521()}
		curve, ok := curves[strings.TrimPrefix(alg, "ecdsa-")]
		if !ok {
			return nil, unsupported(a, "crypto/ecdsa has only P-224, P-256, P-384 and P-521")
		}
		bits := curve.Params().BitSize
		if o == "keygen" {
			return &op{keyBits: bits, detail: "ecdsa.GenerateKey", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := ecdsa.GenerateKey(curve, rand.Reader); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			return nil, err
		}
		sig, err := ecdsa.SignASN1(rand.Reader, k, digest())
		if err != nil {
			return nil, err
		}
		switch o {
		case "sign":
			return &op{keyBits: bits, detail: hashing + " + ecdsa.SignASN1", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := ecdsa.SignASN1(rand.Reader, k, digest()); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		case "verify":
			return &op{keyBits: bits, detail: hashing + " + ecdsa.VerifyASN1", run: func(c int) error {
				for i := 0; i < c; i++ {
					if !ecdsa.VerifyASN1(&k.PublicKey, digest(), sig) {
						return errors.New("ECDSA signature did not verify")
					}
				}
				return nil
			}}, nil
		}
		return nil, notImplemented(a)

	case alg == "x25519" || strings.HasPrefix(alg, "ecdh-"):
		curves := map[string]ecdh.Curve{"x25519": ecdh.X25519(), "ecdh-p256": ecdh.P256(),
			"ecdh-p384": ecdh.P384(), "ecdh-p521": ecdh.P521()}
		curve, ok := curves[alg]
		if !ok {
			return nil, unsupported(a, "crypto/ecdh has only X25519, P-256, P-384 and P-521")
		}
		bits := map[string]int{"x25519": 255, "ecdh-p256": 256, "ecdh-p384": 384, "ecdh-p521": 521}[alg]
		if o == "keygen" {
			return &op{keyBits: bits, detail: "ecdh Curve.GenerateKey", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := curve.GenerateKey(rand.Reader); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		if o != "derive" {
			return nil, notImplemented(a)
		}
		k, _ := curve.GenerateKey(rand.Reader)
		peer, _ := curve.GenerateKey(rand.Reader)
		pub := peer.PublicKey()
		return &op{keyBits: bits, detail: "ecdh PrivateKey.ECDH with a prepared peer public key", run: func(c int) error {
			for i := 0; i < c; i++ {
				if _, err := k.ECDH(pub); err != nil {
					return err
				}
			}
			return nil
		}}, nil

	case alg == "ed25519":
		if o == "keygen" {
			return &op{keyBits: 255, detail: "ed25519.GenerateKey", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, _, err := ed25519.GenerateKey(rand.Reader); err != nil {
						return err
					}
				}
				return nil
			}}, nil
		}
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		sig := ed25519.Sign(priv, msg)
		if o == "sign" {
			return &op{keyBits: 255, detail: "ed25519.Sign over the message (pure Ed25519)", run: func(c int) error {
				for i := 0; i < c; i++ {
					ed25519.Sign(priv, msg)
				}
				return nil
			}}, nil
		}
		return &op{keyBits: 255, detail: "ed25519.Verify over the message", run: func(c int) error {
			for i := 0; i < c; i++ {
				if !ed25519.Verify(pub, msg, sig) {
					return errors.New("Ed25519 signature did not verify")
				}
			}
			return nil
		}}, nil

	case alg == "aes-128-gcm" || alg == "aes-256-gcm":
		klen := 16
		if alg == "aes-256-gcm" {
			klen = 32
		}
		k := key[:klen]
		seal := func(dst []byte) []byte {
			b, _ := aes.NewCipher(k)
			g, _ := cipher.NewGCM(b)
			return g.Seal(dst, iv, msg, aad)
		}
		ct := seal(nil)
		buf := make([]byte, 0, len(msg)+16)
		switch o {
		case "encrypt":
			return &op{detail: fmt.Sprintf("%s: aes.NewCipher + cipher.NewGCM (key schedule) + Seal %d bytes, 12-byte IV, 13-byte AAD, 16-byte tag", alg, a.size),
				run: func(c int) error {
					for i := 0; i < c; i++ {
						seal(buf[:0])
					}
					return nil
				}}, nil
		case "decrypt":
			return &op{detail: fmt.Sprintf("%s: aes.NewCipher + cipher.NewGCM (key schedule) + Open %d bytes (tag checked)", alg, a.size),
				run: func(c int) error {
					for i := 0; i < c; i++ {
						b, _ := aes.NewCipher(k)
						g, _ := cipher.NewGCM(b)
						if _, err := g.Open(buf[:0], iv, ct, aad); err != nil {
							return err
						}
					}
					return nil
				}}, nil
		}
		return nil, notImplemented(a)

	case alg == "chacha20-poly1305":
		return nil, unsupported(a, "ChaCha20-Poly1305 lives in golang.org/x/crypto, not the standard library")
	case alg == "aes-128-ccm":
		return nil, unsupported(a, "no AES-CCM in the standard library")
	case alg == "ed448" || alg == "x448":
		return nil, unsupported(a, "no Curve448")

	case alg == "hmac-sha256":
		mac := hmac.New(sha256.New, key)
		out := make([]byte, 0, 32)
		return &op{detail: fmt.Sprintf("hmac Reset + Write(%d bytes) + Sum on a keyed hash.Hash", a.size), run: func(c int) error {
			for i := 0; i < c; i++ {
				mac.Reset()
				mac.Write(msg)
				out = mac.Sum(out[:0])
			}
			return nil
		}}, nil

	case alg == "sha256" || alg == "sha1":
		var f func() hash.Hash = sha256.New
		if alg == "sha1" {
			f = sha1.New
		}
		h := f()
		out := make([]byte, 0, 32)
		return &op{detail: fmt.Sprintf("%s Reset + Write(%d bytes) + Sum", alg, a.size), run: func(c int) error {
			for i := 0; i < c; i++ {
				h.Reset()
				h.Write(msg)
				out = h.Sum(out[:0])
			}
			return nil
		}}, nil
	}
	if o2, err, ok := setupNew(a, msg); ok {
		return o2, err
	}
	return nil, notImplemented(a)
}
