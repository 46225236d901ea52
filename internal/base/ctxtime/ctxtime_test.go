package ctxtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Minute) || time.Since(start) != time.Minute {
			t.Errorf("Sleep of a minute returned after %v, or reported the context ended", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Errorf("Sleep under a context ending in 1s returned after %v, or reported the hour passed", time.Since(start))
		}
	})
}
