package secperf.cf;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.eclipse.californium.core.CoapClient;
import org.eclipse.californium.core.CoapResource;
import org.eclipse.californium.core.CoapResponse;
import org.eclipse.californium.core.CoapServer;
import org.eclipse.californium.core.config.CoapConfig;
import org.eclipse.californium.core.network.CoapEndpoint;
import org.eclipse.californium.core.server.resources.CoapExchange;
import org.eclipse.californium.elements.config.CertificateAuthenticationMode;
import org.eclipse.californium.elements.config.Configuration;
import org.eclipse.californium.scandium.DTLSConnector;
import org.eclipse.californium.scandium.config.DtlsConfig;
import org.eclipse.californium.scandium.config.DtlsConnectorConfig;
import org.eclipse.californium.scandium.dtls.CertificateType;
import org.eclipse.californium.scandium.dtls.Handshaker;
import org.eclipse.californium.scandium.dtls.ResumingClientHandshaker;
import org.eclipse.californium.scandium.dtls.ResumingServerHandshaker;
import org.eclipse.californium.scandium.dtls.x509.SingleCertificateProvider;
import org.eclipse.californium.scandium.dtls.x509.StaticNewAdvancedCertificateVerifier;

/**
 * secperf's Californium (Scandium DTLS 1.2) CoAP server and client; JSON lines on stdout.
 *
 * <pre>
 * server --bind ADDR --port P --cert CHAIN.pem --key KEY.pem --client-ca CA.pem [--cid-length N]
 *   prints {"type":"listening","port":P}, then {"type":"handshake","resumed":bool} per handshake;
 *   GET /secperf answers 2.05 with a short body.
 * client --host H --port P --ca CA.pem --cert CHAIN.pem --key KEY.pem --n N --warmup W [--cid-length N]
 *        (or, for a token key, --pkcs11-config SUNPKCS11.cfg --pkcs11-pin-file PIN --pkcs11-label LABEL
 *        instead of --key)
 *        --row full|resumed|cid-rebind [--timeout-ms T]
 *   full: a new connector (no session) per request; resumed: one full handshake first, then per
 *   request the session is resumed (abbreviated handshake); cid-rebind: one full handshake first, then
 *   before each request the client's address changes (a NAT rebinding: a relay in this process moves
 *   to a new source port) and the request goes on the same DTLS connection, found by its connection ID.
 *   prints {"type":"conn","i":..,"warmup":..,"ok":..,"usable_us":..,"handshakes":..,"resumed":..}.
 * </pre>
 */
public final class Main {

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            a.put(argv[i], argv[i + 1]);
        }
        CoapConfig.register();
        DtlsConfig.register();
        if (argv.length > 0 && argv[0].equals("server")) {
            server(a);
        } else if (argv.length > 0 && argv[0].equals("client")) {
            System.exit(client(a));
        } else {
            System.err.println("usage: server|client OPTIONS");
            System.exit(2);
        }
    }

    static void emit(String json) {
        synchronized (System.out) {
            System.out.println(json);
            System.out.flush();
        }
    }

    // --- keys and certificates (PEM: certificates, a PKCS#8 private key) ------------------------------
    static Certificate[] certs(String path) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        try (var in = Files.newInputStream(Path.of(path))) {
            Collection<? extends Certificate> c = cf.generateCertificates(in);
            return c.toArray(new Certificate[0]);
        }
    }

    static PrivateKey pkcs8(String path) throws Exception {
        String pem = Files.readString(Path.of(path), StandardCharsets.US_ASCII);
        String b64 = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        byte[] der = Base64.getDecoder().decode(b64);
        for (String alg : new String[] {"EC", "RSA"}) {
            try {
                return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (Exception e) {
                // try the next algorithm
            }
        }
        throw new IllegalArgumentException(path + ": not a PKCS#8 EC or RSA private key");
    }

    static Configuration config(int cidLength, boolean server) {
        Configuration c = Configuration.createStandardWithoutFile();
        if (cidLength > 0) {
            c.set(DtlsConfig.DTLS_CONNECTION_ID_LENGTH, cidLength);
        }
        c.set(DtlsConfig.DTLS_ROLE, server ? DtlsConfig.DtlsRole.SERVER_ONLY : DtlsConfig.DtlsRole.CLIENT_ONLY);
        c.set(DtlsConfig.DTLS_CLIENT_AUTHENTICATION_MODE, CertificateAuthenticationMode.NEEDED);
        c.set(DtlsConfig.DTLS_SERVER_USE_SESSION_ID, true);
        return c;
    }

    // --- server -----------------------------------------------------------------------------------------
    static void server(Map<String, String> a) throws Exception {
        int cid = Integer.parseInt(a.getOrDefault("--cid-length", "6"));
        Configuration cfg = config(cid, true);
        DtlsConnectorConfig.Builder b = DtlsConnectorConfig.builder(cfg);
        b.setAddress(new InetSocketAddress(InetAddress.getByName(a.getOrDefault("--bind", "127.0.0.1")),
                Integer.parseInt(a.getOrDefault("--port", "0"))));
        b.setCertificateIdentityProvider(new SingleCertificateProvider(pkcs8(a.get("--key")), certs(a.get("--cert")),
                CertificateType.X_509));
        b.setAdvancedCertificateVerifier(StaticNewAdvancedCertificateVerifier.builder()
                .setTrustedCertificates(certs(a.get("--client-ca"))).build());
        DTLSConnector connector = new DTLSConnector(b.build()) {
            @Override
            protected void onInitializeHandshaker(Handshaker h) {
                super.onInitializeHandshaker(h);
                emit("{\"type\":\"handshake\",\"resumed\":" + (h instanceof ResumingServerHandshaker) + "}");
            }
        };
        CoapServer server = new CoapServer(cfg);
        server.addEndpoint(new CoapEndpoint.Builder().setConfiguration(cfg).setConnector(connector).build());
        server.add(new CoapResource("secperf") {
            @Override
            public void handleGET(CoapExchange exchange) {
                exchange.respond("secperf");
            }
        });
        server.start();
        emit("{\"type\":\"listening\",\"port\":" + connector.getAddress().getPort() + ",\"cid_length\":" + cid + "}");
        Runtime.getRuntime().addShutdownHook(new Thread(server::destroy));
        Thread.currentThread().join();
    }

    // --- client -----------------------------------------------------------------------------------------
    /** A UDP relay in front of the server whose upstream source port can change: a NAT rebinding. */
    static final class Nat implements AutoCloseable {
        final DatagramSocket down = new DatagramSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        final InetSocketAddress server;
        final AtomicReference<DatagramSocket> up = new AtomicReference<>();
        volatile SocketAddress client;
        volatile boolean open = true;

        Nat(InetSocketAddress server) throws SocketException {
            this.server = server;
            rebind();
            Thread t = new Thread(this::downLoop, "nat-down");
            t.setDaemon(true);
            t.start();
        }

        void rebind() throws SocketException {
            DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            DatagramSocket old = up.getAndSet(s);
            Thread t = new Thread(() -> upLoop(s), "nat-up");
            t.setDaemon(true);
            t.start();
            if (old != null) {
                old.close();
            }
        }

        void downLoop() {  // client -> server, through the current upstream socket
            byte[] buf = new byte[65536];
            while (open) {
                try {
                    DatagramPacket p = new DatagramPacket(buf, buf.length);
                    down.receive(p);
                    client = p.getSocketAddress();
                    up.get().send(new DatagramPacket(p.getData(), p.getLength(), server));
                } catch (IOException e) {
                    if (!open) {
                        return;
                    }
                }
            }
        }

        void upLoop(DatagramSocket s) {  // server -> client
            byte[] buf = new byte[65536];
            while (open && !s.isClosed()) {
                try {
                    DatagramPacket p = new DatagramPacket(buf, buf.length);
                    s.receive(p);
                    if (client != null) {
                        down.send(new DatagramPacket(p.getData(), p.getLength(), client));
                    }
                } catch (IOException e) {
                    return;
                }
            }
        }

        @Override
        public void close() {
            open = false;
            down.close();
            DatagramSocket s = up.get();
            if (s != null) {
                s.close();
            }
        }
    }

    static final class Client implements AutoCloseable {
        final AtomicInteger handshakes = new AtomicInteger();
        final AtomicInteger resumed = new AtomicInteger();
        final DTLSConnector connector;
        final CoapEndpoint endpoint;
        final CoapClient coap;

        Client(Map<String, String> a, PrivateKey key, InetSocketAddress target) throws Exception {
            Configuration cfg = config(Integer.parseInt(a.getOrDefault("--cid-length", "0")), false);
            DtlsConnectorConfig.Builder b = DtlsConnectorConfig.builder(cfg);
            b.setAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            b.setCertificateIdentityProvider(new SingleCertificateProvider(key, certs(a.get("--cert")),
                    CertificateType.X_509));
            b.setAdvancedCertificateVerifier(StaticNewAdvancedCertificateVerifier.builder()
                    .setTrustedCertificates(certs(a.get("--ca"))).build());
            connector = new DTLSConnector(b.build()) {
                @Override
                protected void onInitializeHandshaker(Handshaker h) {
                    super.onInitializeHandshaker(h);
                    handshakes.incrementAndGet();
                    if (h instanceof ResumingClientHandshaker) {
                        resumed.incrementAndGet();
                    }
                }
            };
            endpoint = new CoapEndpoint.Builder().setConfiguration(cfg).setConnector(connector).build();
            endpoint.start();
            coap = new CoapClient("coaps://" + target.getHostString() + ":" + target.getPort() + "/secperf");
            coap.setEndpoint(endpoint);
            coap.setTimeout(Long.parseLong(a.getOrDefault("--timeout-ms", "5000")));
        }

        @Override
        public void close() {
            coap.shutdown();
            endpoint.destroy();
        }
    }

    /**
     * The client key from a PKCS#11 token through the JDK's SunPKCS11 provider: --pkcs11-config names a
     * SunPKCS11 configuration file (library = the secure-element shim), --pkcs11-pin-file the 0600 file
     * holding the user PIN, --pkcs11-label the key's CKA_LABEL (the KeyStore alias). The provider goes
     * first, with only the signature mechanisms and its KeyStore enabled in that file: Scandium keeps one
     * Signature object per thread and algorithm, so a provider chosen by a verification (SunEC, with the
     * provider last) could never take the token key afterwards; first, SunPKCS11 signs with the token key
     * (C_Sign) -- and verifies the server's signatures on the token too (C_Verify, counted apart).
     */
    static PrivateKey pkcs11Key(Map<String, String> a) throws Exception {
        java.security.Provider base = java.security.Security.getProvider("SunPKCS11");
        if (base == null) {
            throw new IllegalStateException("this JDK has no SunPKCS11 provider");
        }
        java.security.Provider p = base.configure(a.get("--pkcs11-config"));
        java.security.Security.insertProviderAt(p, 1);
        char[] pin = Files.readString(Path.of(a.get("--pkcs11-pin-file")), StandardCharsets.US_ASCII).trim().toCharArray();
        java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS11", p);
        ks.load(null, pin);
        java.util.Arrays.fill(pin, '\0');
        String label = a.get("--pkcs11-label");
        java.security.Key k = ks.getKey(label, null);
        if (!(k instanceof PrivateKey)) {
            throw new IllegalArgumentException("no private key labelled " + label + " in the token (aliases: "
                    + java.util.Collections.list(ks.aliases()) + ")");
        }
        return (PrivateKey) k;
    }

    static int client(Map<String, String> a) throws Exception {
        PrivateKey key;
        try {
            key = a.containsKey("--pkcs11-config") ? pkcs11Key(a) : pkcs8(a.get("--key"));
        } catch (Exception e) {
            emit("{\"type\":\"error\",\"reason\":\"client key: " + String.valueOf(e).replace("\"", "'") + "\"}");
            return 1;
        }
        emit("{\"type\":\"key\",\"class\":\"" + key.getClass().getName() + "\",\"algorithm\":\""
                + key.getAlgorithm() + "\"}");
        InetSocketAddress server = new InetSocketAddress(a.getOrDefault("--host", "127.0.0.1"),
                Integer.parseInt(a.get("--port")));
        String row = a.getOrDefault("--row", "full");
        int n = Integer.parseInt(a.getOrDefault("--n", "10"));
        int warmup = Integer.parseInt(a.getOrDefault("--warmup", "1"));
        Nat nat = row.equals("cid-rebind") ? new Nat(server) : null;
        InetSocketAddress target = nat != null ? (InetSocketAddress) nat.down.getLocalSocketAddress() : server;
        Client kept = row.equals("full") ? null : new Client(a, key, target);
        if (kept != null) {
            CoapResponse r = kept.coap.get();  // the one full handshake the other rows start from
            if (r == null || !r.isSuccess()) {
                emit("{\"type\":\"error\",\"reason\":\"the first request (full handshake) got no 2.05 response\"}");
                return 1;
            }
        }
        for (int i = 0; i < warmup + n; i++) {
            Client c = kept;
            try {
                if (row.equals("full")) {
                    c = new Client(a, key, target);
                } else if (row.equals("resumed")) {
                    c.connector.forceResumeAllSessions();
                } else {
                    nat.rebind();
                }
                int h0 = c.handshakes.get();
                int r0 = c.resumed.get();
                long t0 = System.nanoTime();
                CoapResponse r = c.coap.get();
                long t1 = System.nanoTime();
                boolean ok = r != null && r.isSuccess();
                // System.nanoTime is CLOCK_MONOTONIC on Linux: t0_ns/t1_ns match the shim's call log
                emit(String.format("{\"type\":\"conn\",\"i\":%d,\"warmup\":%b,\"ok\":%b,\"usable_us\":%.3f,"
                        + "\"t0_ns\":%d,\"t1_ns\":%d,"
                        + "\"handshakes\":%d,\"resumed\":%b%s}", i, i < warmup, ok, (t1 - t0) / 1000.0, t0, t1,
                        c.handshakes.get() - h0, c.resumed.get() > r0,
                        ok ? "" : ",\"reason\":\"" + (r == null ? "no response (timeout)" : "response " + r.getCode())
                                + "\""));
            } catch (Exception e) {
                emit("{\"type\":\"conn\",\"i\":" + i + ",\"warmup\":" + (i < warmup) + ",\"ok\":false,\"reason\":\""
                        + String.valueOf(e).replace("\"", "'") + "\"}");
            } finally {
                if (row.equals("full") && c != null) {
                    c.close();
                }
            }
        }
        if (kept != null) {
            kept.close();
        }
        if (nat != null) {
            nat.close();
        }
        emit("{\"type\":\"end\"}");
        return 0;
    }
}
