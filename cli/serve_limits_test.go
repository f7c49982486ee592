package cli

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds how long a test waits for the server; it is not a timing assertion.
const hangGuard = 30 * time.Second

// rawPut opens a connection to base and sends the headers of a PUT announcing contentLength
// body bytes.
func rawPut(t *testing.T, base string, contentLength int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, "PUT /v1/builds/b-slow HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(contentLength)+"\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitClosed reads from conn until the server closes it, failing after hangGuard.
func waitClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	_, err := io.Copy(io.Discard, bufio.NewReader(conn))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server still holds the connection after %s", hangGuard)
	}
}

func TestServe_BodyAnnouncedAndNeverSentIsCutOff(t *testing.T) {
	t.Setenv("REDSTATE_SERVER_READ_TIMEOUT", "300ms")
	base, _, _, _ := startServe(t)
	conn := rawPut(t, base, 1000)
	waitClosed(t, conn)
}

func TestServe_TrickledBodyIsCutOff(t *testing.T) {
	t.Setenv("REDSTATE_SERVER_READ_TIMEOUT", "300ms")
	base, _, _, _ := startServe(t)
	conn := rawPut(t, base, 1000) // at one byte per 100ms the body would take 100s
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	waitClosed(t, conn)
}

func TestServe_RefusesShortTokensOffLoopback(t *testing.T) {
	t.Setenv("REDSTATE_AUTH_TOKENS", "ci:change-me:write")
	root := NewRootCommand()
	root.SetArgs([]string{"serve", "--addr", "0.0.0.0:0"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "fewer than the 16 required off loopback") {
		t.Fatalf("serve with a 9-character token on 0.0.0.0: %v", err)
	}
}

func TestServe_LoopbackRefusesForeignHost(t *testing.T) {
	base, _, _, _ := startServe(t)
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/builds", nil)
	req.Host = "rebound.attacker.example"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host on a loopback listener: %d", res.StatusCode)
	}
	if code, _ := request(t, http.MethodGet, base+"/v1/builds", ""); code != http.StatusOK {
		t.Fatalf("own Host: %d", code)
	}
}
