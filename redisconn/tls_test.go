package redisconn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// TestNew_RedissURLVerifiesTheServerWithTheConfiguredCA starts a TLS-enabled redis-server with
// a self-signed certificate: rediss:// succeeds when redis.tls-ca-file trusts it and fails
// (unknown authority) with the system roots.
func TestNew_RedissURLVerifiesTheServerWithTheConfiguredCA(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	tlsPort := freePort(t)
	redistest.StartStandalone(t,
		redistest.WithConfig("tls-port", strconv.Itoa(tlsPort)),
		redistest.WithConfig("tls-cert-file", certFile),
		redistest.WithConfig("tls-key-file", keyFile),
		redistest.WithConfig("tls-auth-clients", "no"),
	)
	url := fmt.Sprintf("rediss://127.0.0.1:%d", tlsPort)

	trusted := newClient(t, redisconn.Options{URL: url, TLSCAFile: certFile, DialTimeout: 2 * time.Second})
	if err := trusted.Ping(ctxT(t)).Err(); err != nil {
		t.Fatalf("PING over TLS with the CA file: %v", err)
	}
	untrusted := newClient(t, redisconn.Options{URL: url, DialTimeout: 2 * time.Second, MaxRetries: 0, DialRetries: 1})
	if err := untrusted.Ping(ctxT(t)).Err(); err == nil {
		t.Fatal("PING over TLS succeeded without trusting the self-signed certificate")
	}
}

func TestNew_RejectsAnUnusableCAFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := redisconn.Options{URL: "rediss://127.0.0.1:1", TLSCAFile: bad}
	if _, err := newClientErr(c); err == nil {
		t.Fatal("New accepted a CA file without certificates")
	}
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its key as PEM files.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redstate test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newClientErr(c redisconn.Options) (any, error) { return redisconn.New(c) }
