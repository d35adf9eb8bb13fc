package store_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestHandlesKeepOperatorsOff checks that the store handle an application
// holds shows no method that bypasses the authorization binding: the
// operator methods are reached through Operator only, as the job writes
// are through Jobs; and that it has one monitoring read, Gauges.
func TestHandlesKeepOperatorsOff(t *testing.T) {
	handles := []any{(*sqlite.Store)(nil), (*postgres.Store)(nil), (*memory.Manager)(nil)}
	for _, h := range handles {
		t.Run(reflect.TypeOf(h).String(), func(t *testing.T) {
			if _, ok := h.(backend.Operator); ok {
				t.Error("the handle itself implements backend.Operator")
			}
			if _, ok := h.(backend.OperatorSource); !ok {
				t.Error("the handle is not a backend.OperatorSource")
			}
			var prefixed []string
			for m := range reflect.TypeOf(h).Methods() {
				if strings.HasPrefix(m.Name, "Operator") && m.Name != "Operator" {
					prefixed = append(prefixed, m.Name)
				}
			}
			if diff := cmp.Diff([]string(nil), prefixed); diff != "" {
				t.Errorf("operator methods on the handle (-want +got):\n%s", diff)
			}
			// Row counts beside Gauges were a second monitoring read that
			// only tests called.
			if _, ok := reflect.TypeOf(h).MethodByName("Stats"); ok {
				t.Error("the handle has a Stats method beside Gauges")
			}
		})
	}
}
