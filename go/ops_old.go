//go:build !go1.24

package main

import "strings"

// Before Go 1.24 there is no crypto/mlkem or crypto/sha3.
func setupNew(a *args, msg []byte) (*op, error, bool) {
	if strings.HasPrefix(a.alg, "ml-") || a.alg == "sha3-256" {
		return nil, unsupported(a, "needs Go 1.24 or newer (crypto/mlkem, crypto/sha3)"), true
	}
	return nil, nil, false
}
