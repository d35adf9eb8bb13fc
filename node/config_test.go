package node

import "testing"

func TestDefaultMaxConns(t *testing.T) {
	n := defaultMaxConns()
	if limit, ok := descriptorLimit(); ok && uint64(n) >= limit {
		t.Errorf("defaultMaxConns = %d with a descriptor limit of %d", n, limit)
	}
	if n < minDerivedConns || n > maxDerivedConns {
		t.Errorf("defaultMaxConns = %d, outside [%d, %d]", n, minDerivedConns, maxDerivedConns)
	}
}
