package secperf.jmh;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.Provider;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.interfaces.RSAPrivateCrtKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PSSParameterSpec;
import java.security.spec.RSAKeyGenParameterSpec;
import java.security.spec.RSAPrivateKeySpec;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/** One `secperf crypto` operation on a JCA provider, prepared before timing (keys, contexts). */
public final class Ops {
    /** A prepared operation; call() does one and returns its output (for the Blackhole). */
    public interface Op {
        Object call() throws Exception;
    }

    /** The algorithm or option is not offered: the row is "unsupported", never measured elsewhere. */
    public static final class Unsupported extends Exception {
        public Unsupported(String reason) { super(reason); }
    }

    public static final class Prepared {
        public final Op op;
        public final String detail;
        public final int keyBits;
        Prepared(Op op, String detail, int keyBits) { this.op = op; this.detail = detail; this.keyBits = keyBits; }
    }

    private static final byte[] SHA256_DIGESTINFO = hex("3031300d060960864801650304020105000420");
    private static final byte[] SHA1_DIGESTINFO = hex("3021300906052b0e03021a05000414");

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static void fill(byte[] buf, long[] state) {
        for (int i = 0; i < buf.length; i++) {
            long x = state[0] == 0 ? 0x9E3779B97F4A7C15L : state[0];
            x ^= x >>> 12; x ^= x << 25; x ^= x >>> 27;
            state[0] = x;
            buf[i] = (byte) ((x * 2685821657736338717L) >>> 56);
        }
    }

    private static String curveName(String c) {
        switch (c) {
            case "p256": return "secp256r1";
            case "p384": return "secp384r1";
            case "p521": return "secp521r1";
            case "brainpoolp256r1": return "brainpoolP256r1";
            default: return c;
        }
    }

    private static Signature sig(String name, Provider p) throws GeneralSecurityException {
        return p == null ? Signature.getInstance(name) : Signature.getInstance(name, p);
    }

    private static KeyPairGenerator kpg(String name, Provider p) throws GeneralSecurityException {
        return p == null ? KeyPairGenerator.getInstance(name) : KeyPairGenerator.getInstance(name, p);
    }

    /** Prepares alg/op; throws Unsupported with the library's reason where the provider lacks it. */
    public static Prepared prepare(String alg, String op, int size, String hash, boolean prehashed,
                                   long seed, Provider p, String library) throws Exception {
        long[] st = {seed == 0 ? 1 : seed};
        byte[] msg = new byte[size];
        fill(msg, st);
        byte[] key = new byte[32];
        fill(key, st);
        byte[] iv = new byte[12];
        fill(iv, st);
        byte[] aad = new byte[13];
        fill(aad, st);
        SecureRandom rnd = new SecureRandom();
        String H = hash.equals("sha1") ? "SHA1" : "SHA256";
        String hashing = (prehashed ? "digest prepared (" : "hash the message (") + (hash.equals("sha1") ? "SHA-1" : "SHA-256") + ")";
        String unsup = "unsupported by " + library + ": " + alg + " " + op;
        try {
            if (alg.startsWith("rsa-")) {
                String[] parts = alg.split("-");
                int bits = Integer.parseInt(parts[1]);
                String variant = parts.length > 2 ? parts[2] : "";
                KeyPairGenerator g = kpg("RSA", p);
                g.initialize(new RSAKeyGenParameterSpec(bits, RSAKeyGenParameterSpec.F4), rnd);
                if (op.equals("keygen"))
                    return new Prepared(g::generateKeyPair, "KeyPairGenerator(RSA).generateKeyPair [" + g.getProvider().getName() + "]", bits);
                KeyPair kp = g.generateKeyPair();
                PrivateKey priv = kp.getPrivate();
                String name = H + "withRSA";
                if (variant.equals("nocrt")) {
                    RSAPrivateCrtKey crt = (RSAPrivateCrtKey) priv;
                    KeyFactory kf = p == null ? KeyFactory.getInstance("RSA") : KeyFactory.getInstance("RSA", p);
                    priv = kf.generatePrivate(new RSAPrivateKeySpec(crt.getModulus(), crt.getPrivateExponent()));
                } else if (variant.equals("pss")) {
                    name = "RSASSA-PSS";
                } else if (!variant.isEmpty()) {
                    throw new Unsupported("not measured: secperf's JVM backend does not implement " + alg);
                }
                boolean pss = variant.equals("pss");
                if (pss && prehashed)
                    throw new Unsupported("not measured: the JCA has no prehashed RSASSA-PSS signature (NONEwithRSASSA-PSS)");
                Signature s = sig(prehashed ? "NONEwithRSA" : name, p);
                if (pss)
                    s.setParameter(new PSSParameterSpec(hash.equals("sha1") ? "SHA-1" : "SHA-256", "MGF1",
                            hash.equals("sha1") ? MGF1ParameterSpec.SHA1 : MGF1ParameterSpec.SHA256, hash.equals("sha1") ? 20 : 32, 1));
                byte[] input = msg;
                if (prehashed) {
                    byte[] d = MessageDigest.getInstance(hash.equals("sha1") ? "SHA-1" : "SHA-256").digest(msg);
                    byte[] pre = hash.equals("sha1") ? SHA1_DIGESTINFO : SHA256_DIGESTINFO;
                    input = new byte[pre.length + d.length];
                    System.arraycopy(pre, 0, input, 0, pre.length);
                    System.arraycopy(d, 0, input, pre.length, d.length);
                }
                final byte[] in = input;
                s.initSign(priv);
                s.update(in);
                final byte[] signature = s.sign();
                String prov = " [" + s.getProvider().getName() + "]";
                if (op.equals("sign")) {
                    return new Prepared(() -> { s.update(in); return s.sign(); },
                            hashing + " + Signature(" + s.getAlgorithm() + ").update + sign" + (variant.equals("nocrt") ? " with an n, d-only key (no CRT)" : " (CRT)") + prov, bits);
                }
                if (op.equals("verify")) {
                    Signature v = sig(prehashed ? "NONEwithRSA" : name, p);
                    if (pss) v.setParameter(s.getParameters().getParameterSpec(PSSParameterSpec.class));
                    v.initVerify(kp.getPublic());
                    return new Prepared(() -> { v.update(in); if (!v.verify(signature)) throw new IllegalStateException("bad signature"); return v; },
                            hashing + " + Signature(" + v.getAlgorithm() + ").update + verify" + prov, bits);
                }
            } else if (alg.startsWith("ecdsa-") || alg.startsWith("ecdh-")) {
                boolean dh = alg.startsWith("ecdh-");
                String curve = curveName(alg.substring(alg.indexOf('-') + 1));
                KeyPairGenerator g = kpg("EC", p);
                try {
                    g.initialize(new ECGenParameterSpec(curve), rnd);
                } catch (GeneralSecurityException e) {
                    throw new Unsupported(unsup + " — " + g.getProvider().getName() + ": " + e.getMessage());
                }
                KeyPair kp = g.generateKeyPair();
                int bits = ((java.security.interfaces.ECKey) kp.getPublic()).getParams().getCurve().getField().getFieldSize();
                String prov = " [" + g.getProvider().getName() + "]";
                if (op.equals("keygen"))
                    return new Prepared(g::generateKeyPair, "KeyPairGenerator(EC, " + curve + ").generateKeyPair" + prov, bits);
                if (dh) {
                    KeyPair peer = g.generateKeyPair();
                    KeyAgreement ka = p == null ? KeyAgreement.getInstance("ECDH") : KeyAgreement.getInstance("ECDH", p);
                    ka.init(kp.getPrivate());
                    return new Prepared(() -> { ka.doPhase(peer.getPublic(), true); return ka.generateSecret(); },
                            "KeyAgreement(ECDH).doPhase(prepared peer public key) + generateSecret [" + ka.getProvider().getName() + "]", bits);
                }
                Signature s = sig(prehashed ? "NONEwithECDSA" : H + "withECDSA", p);
                final byte[] in = prehashed ? MessageDigest.getInstance(hash.equals("sha1") ? "SHA-1" : "SHA-256").digest(msg) : msg;
                s.initSign(kp.getPrivate(), rnd);
                s.update(in);
                final byte[] signature = s.sign();
                if (op.equals("sign"))
                    return new Prepared(() -> { s.update(in); return s.sign(); },
                            hashing + " + Signature(" + s.getAlgorithm() + ").update + sign (DER) on " + curve + " [" + s.getProvider().getName() + "]", bits);
                if (op.equals("verify")) {
                    Signature v = sig(s.getAlgorithm(), p);
                    v.initVerify(kp.getPublic());
                    return new Prepared(() -> { v.update(in); if (!v.verify(signature)) throw new IllegalStateException("bad signature"); return v; },
                            hashing + " + Signature(" + v.getAlgorithm() + ").update + verify on " + curve + " [" + v.getProvider().getName() + "]", bits);
                }
            } else if (alg.equals("ed25519") || alg.equals("ed448")) {
                String name = alg.equals("ed25519") ? "Ed25519" : "Ed448";
                int bits = alg.equals("ed25519") ? 255 : 448;
                KeyPairGenerator g = kpg(name, p);
                if (op.equals("keygen"))
                    return new Prepared(g::generateKeyPair, "KeyPairGenerator(" + name + ").generateKeyPair [" + g.getProvider().getName() + "]", bits);
                KeyPair kp = g.generateKeyPair();
                Signature s = sig(name, p);
                s.initSign(kp.getPrivate());
                s.update(msg);
                final byte[] signature = s.sign();
                if (op.equals("sign"))
                    return new Prepared(() -> { s.update(msg); return s.sign(); }, "Signature(" + name + ").update + sign (pure) [" + s.getProvider().getName() + "]", bits);
                Signature v = sig(name, p);
                v.initVerify(kp.getPublic());
                return new Prepared(() -> { v.update(msg); if (!v.verify(signature)) throw new IllegalStateException("bad signature"); return v; },
                        "Signature(" + name + ").update + verify [" + v.getProvider().getName() + "]", bits);
            } else if (alg.equals("x25519") || alg.equals("x448")) {
                String name = alg.equals("x25519") ? "X25519" : "X448";
                int bits = alg.equals("x25519") ? 255 : 448;
                KeyPairGenerator g = kpg(name, p);
                if (op.equals("keygen"))
                    return new Prepared(g::generateKeyPair, "KeyPairGenerator(" + name + ").generateKeyPair [" + g.getProvider().getName() + "]", bits);
                KeyPair kp = g.generateKeyPair(), peer = g.generateKeyPair();
                KeyAgreement ka = p == null ? KeyAgreement.getInstance(name) : KeyAgreement.getInstance(name, p);
                ka.init(kp.getPrivate());
                return new Prepared(() -> { ka.doPhase(peer.getPublic(), true); return ka.generateSecret(); },
                        "KeyAgreement(" + name + ").doPhase(prepared peer public key) + generateSecret [" + ka.getProvider().getName() + "]", bits);
            } else if (alg.endsWith("-gcm") || alg.equals("chacha20-poly1305") || alg.equals("aes-128-ccm")) {
                boolean cc = alg.equals("chacha20-poly1305");
                String tr = cc ? "ChaCha20-Poly1305" : alg.endsWith("-gcm") ? "AES/GCM/NoPadding" : "AES/CCM/NoPadding";
                Cipher c = p == null ? Cipher.getInstance(tr) : Cipher.getInstance(tr, p);
                SecretKeySpec k = new SecretKeySpec(key, 0, alg.startsWith("aes-128") ? 16 : 32, cc ? "ChaCha20" : "AES");
                boolean enc = op.equals("encrypt");
                final byte[] nonce = iv.clone();
                java.util.function.Function<byte[], java.security.spec.AlgorithmParameterSpec> spec =
                        n -> cc ? new IvParameterSpec(n) : new GCMParameterSpec(128, n);
                c.init(Cipher.ENCRYPT_MODE, k, spec.apply(iv));
                c.updateAAD(aad);
                final byte[] ct = c.doFinal(msg);
                final byte[] out = new byte[msg.length + 16];
                String prov = " [" + c.getProvider().getName() + "]";
                if (enc) {
                    // The JCA refuses a key + IV pair twice for encryption: a new IV per op (a counter), as TLS does.
                    final long[] ctr = {0};
                    return new Prepared(() -> {
                        ctr[0]++;
                        for (int i = 0; i < 8; i++) nonce[4 + i] = (byte) (ctr[0] >>> (8 * i));
                        c.init(Cipher.ENCRYPT_MODE, k, spec.apply(nonce));
                        c.updateAAD(aad);
                        return c.doFinal(msg, 0, msg.length, out, 0);
                    }, tr + ": init (key schedule, new 12-byte IV) + 13-byte AAD + encrypt " + size + " bytes + 16-byte tag" + prov, 0);
                }
                if (op.equals("decrypt")) {
                    // SunJCE's ChaCha20-Poly1305 refuses to be initialised twice in a row with the same
                    // key and nonce, decryption included: two ciphertexts under two nonces, taken in turn.
                    final byte[] iv2 = iv.clone();
                    iv2[11] ^= 1;
                    c.init(Cipher.ENCRYPT_MODE, k, spec.apply(iv2));
                    c.updateAAD(aad);
                    final byte[] ct2 = c.doFinal(msg);
                    final byte[][] ivs = {iv, iv2}, cts = {ct, ct2};
                    final int[] turn = {1};   // the first call takes iv: the last init used iv2
                    return new Prepared(() -> {
                        int t = turn[0] ^= 1;
                        c.init(Cipher.DECRYPT_MODE, k, spec.apply(ivs[t]));
                        c.updateAAD(aad);
                        return c.doFinal(cts[t], 0, cts[t].length, out, 0);
                    }, tr + ": init (key schedule, 12-byte IV) + 13-byte AAD + decrypt " + size + " bytes (tag checked)" + prov, 0);
                }
            } else if (alg.equals("hmac-sha256")) {
                Mac m = p == null ? Mac.getInstance("HmacSHA256") : Mac.getInstance("HmacSHA256", p);
                m.init(new SecretKeySpec(key, "HmacSHA256"));
                return new Prepared(() -> { m.update(msg); return m.doFinal(); }, "Mac(HmacSHA256).update(" + size + " bytes) + doFinal on a keyed Mac [" + m.getProvider().getName() + "]", 0);
            } else if (alg.equals("sha256") || alg.equals("sha1") || alg.equals("sha3-256")) {
                String name = alg.equals("sha256") ? "SHA-256" : alg.equals("sha1") ? "SHA-1" : "SHA3-256";
                MessageDigest md = p == null ? MessageDigest.getInstance(name) : MessageDigest.getInstance(name, p);
                return new Prepared(() -> md.digest(msg), "MessageDigest(" + name + ").digest(" + size + " bytes) [" + md.getProvider().getName() + "]", 0);
            } else if (alg.startsWith("ml-") || alg.startsWith("chaskey") || alg.equals("aes-128-cmac")
                    || alg.equals("poly1305") || alg.equals("siphash")) {
                throw new Unsupported("not measured: secperf's JVM backend does not implement " + alg + " " + op);
            }
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new Unsupported(unsup + " — " + e.getMessage());
        } catch (java.security.InvalidAlgorithmParameterException e) {
            throw new Unsupported(unsup + " — " + e.getMessage());
        }
        throw new Unsupported("not measured: secperf's JVM backend does not implement " + alg + " " + op);
    }
}
