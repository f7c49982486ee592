package kafkasource_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/redistest"
)

// certs are a CA and the server's and a client's certificates signed by it.
type certs struct {
	caPool            *x509.CertPool
	server            tls.Certificate
	caFile, certFile  string
	keyFile, notPEMCA string
}

// newCerts writes a CA, a client certificate and its key as PEM files in a temporary
// directory and returns them with a server certificate for 127.0.0.1.
func newCerts(t *testing.T) certs {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(k)
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return pair, certPEM, keyPEM
	}
	server, _, _ := issue(2, x509.ExtKeyUsageServerAuth)
	_, clientPEM, clientKey := issue(3, x509.ExtKeyUsageClientAuth)
	c := certs{caPool: x509.NewCertPool(), server: server, caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "client.pem"),
		keyFile: filepath.Join(dir, "client-key.pem"), notPEMCA: filepath.Join(dir, "not-pem.txt")}
	c.caPool.AddCert(caCert)
	for path, b := range map[string][]byte{c.caFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), c.certFile: clientPEM,
		c.keyFile: clientKey, c.notPEMCA: []byte("not a certificate")} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestSource_TLSClientCertAndSCRAM: the source reaches a broker that requires TLS with a client
// certificate and SCRAM-SHA-512, from the settings index.kafka.tls and .sasl give.
func TestSource_TLSClientCertAndSCRAM(t *testing.T) {
	c := newCerts(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "secure"), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "redstate", "s3cret"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{c.server}, ClientCAs: c.caPool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	clientTLS, err := kafkasource.TLSConfig(c.caFile, c.certFile, c.keyFile, false)
	if err != nil {
		t.Fatal(err)
	}
	auth := scram.Auth{User: "redstate", Pass: "s3cret"}.AsSha512Mechanism()
	e := newEnvWith(t, cluster.ListenAddrs(), redistest.SharedStandalone(t).Client(t), kgo.DialTLSConfig(clientTLS.Clone()), kgo.SASL(auth))
	e.produce("secure", 0, canal("INSERT", 1_700_000_000_000, 1, rowJSON(1, state{72, 501}, "1")))
	src, err := kafkasource.New(e.ix, kafkasource.Options{Brokers: e.brokers, Topics: []string{"secure"}, Format: index.FormatCanal,
		TLS: clientTLS, SASL: kafkasource.SASL{Mechanism: index.SASLScramSHA512, Username: "redstate", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, src)
	e.waitTruth(truth{1: {72, 501}})
}

// TestNewAndTLSConfig_RefuseBadSettings: the constructor and TLSConfig name what is wrong.
func TestNewAndTLSConfig_RefuseBadSettings(t *testing.T) {
	c := newCerts(t)
	ix, err := index.New(nil, nil, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok := kafkasource.Options{Brokers: []string{"127.0.0.1:9092"}, Topics: []string{"t"}}
	cases := map[string]struct {
		err  error
		want string
	}{
		"no topics":   {err: second(kafkasource.New(ix, kafkasource.Options{Brokers: ok.Brokers})), want: "at least one topic"},
		"format":      {err: second(kafkasource.New(ix, kafkasource.Options{Brokers: ok.Brokers, Topics: ok.Topics, Format: "native"})), want: `format "native"`},
		"mechanism":   {err: second(kafkasource.New(ix, kafkasource.Options{Brokers: ok.Brokers, Topics: ok.Topics, SASL: kafkasource.SASL{Mechanism: "gssapi"}})), want: `mechanism "gssapi"`},
		"missing CA":  {err: second(kafkasource.TLSConfig(filepath.Join(t.TempDir(), "none.pem"), "", "", false)), want: "kafka TLS CA"},
		"CA not PEM":  {err: second(kafkasource.TLSConfig(c.notPEMCA, "", "", false)), want: "no PEM certificate"},
		"key missing": {err: second(kafkasource.TLSConfig("", c.certFile, "", false)), want: "client certificate"},
	}
	for name, tc := range cases {
		if !redstate.IsCode(tc.err, redstate.EINVALID) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want EINVALID with %q", name, tc.err, tc.want)
		}
	}
	if _, err := kafkasource.New(ix, ok); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// second returns the error of a two-valued call.
func second[T any](_ T, err error) error { return err }
