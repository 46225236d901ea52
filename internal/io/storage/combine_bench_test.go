package storage

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/kuradb/kura/hlc"
)

// BenchmarkApplyHotKey measures synced Applies of concurrent writers to one key on disk,
// the case combining is for, and to distinct keys (spread over the stripes) beside it.
func BenchmarkApplyHotKey(b *testing.B) {
	for _, hot := range []bool{true, false} {
		for _, writers := range []int{2, 16, 256} {
			name := fmt.Sprintf("hot=%t/writers=%d", hot, writers)
			b.Run(name, func(b *testing.B) {
				e, err := Open(Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				var ts, writer atomic.Int64
				b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					key := "hot"
					if !hot {
						key = fmt.Sprint("key", writer.Add(1))
					}
					for pb.Next() {
						if _, err := e.Apply("ks", put(key, "v", hlc.Timestamp(ts.Add(1)))); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
