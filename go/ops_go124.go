//go:build go1.24

package main

import (
	"crypto/mlkem"
	"crypto/sha3"
	"fmt"
)

// Algorithms of newer Go releases (crypto/mlkem, crypto/sha3: Go 1.24).
func setupNew(a *args, msg []byte) (*op, error, bool) {
	switch a.alg {
	case "sha3-256":
		return &op{detail: fmt.Sprintf("sha3.Sum256 of %d bytes", a.size), run: func(c int) error {
			for i := 0; i < c; i++ {
				sha3.Sum256(msg)
			}
			return nil
		}}, nil, true
	case "ml-kem-512":
		return nil, unsupported(a, "crypto/mlkem offers ML-KEM-768 and ML-KEM-1024 only"), true
	case "ml-kem-768", "ml-kem-1024":
		type dk interface {
			Bytes() []byte
		}
		var gen func() (any, error)
		var encaps func(k any) ([]byte, []byte)
		var decaps func(k any, ct []byte) error
		if a.alg == "ml-kem-768" {
			gen = func() (any, error) { return mlkem.GenerateKey768() }
			encaps = func(k any) ([]byte, []byte) { return k.(*mlkem.DecapsulationKey768).EncapsulationKey().Encapsulate() }
			decaps = func(k any, ct []byte) error { _, err := k.(*mlkem.DecapsulationKey768).Decapsulate(ct); return err }
		} else {
			gen = func() (any, error) { return mlkem.GenerateKey1024() }
			encaps = func(k any) ([]byte, []byte) { return k.(*mlkem.DecapsulationKey1024).EncapsulationKey().Encapsulate() }
			decaps = func(k any, ct []byte) error { _, err := k.(*mlkem.DecapsulationKey1024).Decapsulate(ct); return err }
		}
		k, err := gen()
		if err != nil {
			return nil, err, true
		}
		_, ct := encaps(k)
		switch a.op {
		case "keygen":
			return &op{detail: "mlkem.GenerateKey", run: func(c int) error {
				for i := 0; i < c; i++ {
					if _, err := gen(); err != nil {
						return err
					}
				}
				return nil
			}}, nil, true
		case "encaps":
			return &op{detail: "EncapsulationKey.Encapsulate -> (shared key, ciphertext)", run: func(c int) error {
				for i := 0; i < c; i++ {
					encaps(k)
				}
				return nil
			}}, nil, true
		case "decaps":
			return &op{detail: "DecapsulationKey.Decapsulate(ciphertext)", run: func(c int) error {
				for i := 0; i < c; i++ {
					if err := decaps(k, ct); err != nil {
						return err
					}
				}
				return nil
			}}, nil, true
		}
	case "ml-dsa-44", "ml-dsa-65", "ml-dsa-87":
		return nil, unsupported(a, "no ML-DSA in the standard library"), true
	}
	return nil, nil, false
}
