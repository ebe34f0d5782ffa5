package secperf.jmh;

import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Provider;
import java.security.Signature;
import java.security.spec.ECGenParameterSpec;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

/**
 * The reference for benchmarks/libraries.py: RSA-2048 and ECDSA P-256 signing and verification
 * written the way a Java developer writes a JMH benchmark, independently of secperf's Ops: the
 * JCA's default providers (SunRsaSign, SunEC) or Bouncy Castle's, SHA256withRSA / SHA256withECDSA over a 32-byte
 * message (hashing included), keys made in the trial set-up. It shares nothing with Bench but the
 * jar, and is run through JMH's own command line (org.openjdk.jmh.Main), whose avgt score and
 * per-fork iterations are the JVM's "own benchmark tool" figures.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class Reference {
    @Param({"ecdsa-p256", "rsa-2048"}) public String alg;
    /** jce: the JCA's default providers; bouncycastle: Bouncy Castle's provider object */
    @Param({"jce"}) public String provider;

    private final byte[] message = new byte[32];
    private Signature signer, verifier;
    private byte[] signature;

    @Setup
    public void keys() throws Exception {
        for (int i = 0; i < message.length; i++) message[i] = (byte) (i * 31 + 7);
        Provider bc = provider.equals("bouncycastle") ? new BouncyCastleProvider() : null;
        KeyPairGenerator g;
        String name;
        if (alg.equals("rsa-2048")) {
            g = bc == null ? KeyPairGenerator.getInstance("RSA") : KeyPairGenerator.getInstance("RSA", bc);
            g.initialize(2048);
            name = "SHA256withRSA";
        } else if (alg.equals("ecdsa-p256")) {
            g = bc == null ? KeyPairGenerator.getInstance("EC") : KeyPairGenerator.getInstance("EC", bc);
            g.initialize(new ECGenParameterSpec("secp256r1"));
            name = "SHA256withECDSA";
        } else {
            throw new IllegalArgumentException("Reference covers rsa-2048 and ecdsa-p256, not " + alg);
        }
        KeyPair kp = g.generateKeyPair();
        signer = bc == null ? Signature.getInstance(name) : Signature.getInstance(name, bc);
        signer.initSign(kp.getPrivate());
        verifier = bc == null ? Signature.getInstance(name) : Signature.getInstance(name, bc);
        verifier.initVerify(kp.getPublic());
        signer.update(message);
        signature = signer.sign();
    }

    @Benchmark
    public byte[] sign() throws Exception {
        signer.update(message);
        return signer.sign();
    }

    @Benchmark
    public boolean verify() throws Exception {
        verifier.update(message);
        return verifier.verify(signature);
    }
}
