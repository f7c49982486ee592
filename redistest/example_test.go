package redistest

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redisAddr is your Redis; the tests start their own (TestMain, MainWithStandalone).
var redisAddr = "127.0.0.1:6379"

// An example dials the address the package's TestMain got from MainWithStandalone.
func ExampleMainWithStandalone() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	pong, err := rdb.Ping(context.Background()).Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pong)
	// Output: PONG
}
