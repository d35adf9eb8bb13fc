package postgres

import (
	"fmt"
	"testing"
)

// BenchmarkAnswerRelay measures one forwarded answer from node A until B's
// receiver has it: inline in the notification (200 bytes) or through a row
// (64 KiB, 1 MiB).
func BenchmarkAnswerRelay(b *testing.B) {
	for _, size := range []int{200, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			schema := newSchema(b)
			a, s := openStore(b, schema, nil), openStore(b, schema, nil)
			ra, rb := newRelay(b, a, AnswerRelayOptions{}), newRelay(b, s, AnswerRelayOptions{})
			on := receiveInto(b, rb, "node-b")
			body := response(size, "x")
			ctx := ctxT(b)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				if err := ra.Forward(ctx, "node-b", body); err != nil {
					b.Fatal(err)
				}
				waitFor(b, on, "the answer")
			}
		})
	}
}
