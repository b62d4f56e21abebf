package live

import "testing"

func TestSet(t *testing.T) {
	var s Set[int]
	for i := range 5 {
		s.Add(i)
	}
	if !s.Remove(2) || s.Remove(2) || s.Remove(9) {
		t.Fatal("Remove: a present handle once, then never again")
	}
	got := s.Take()
	want := []int{4, 3, 1, 0}
	if len(got) != len(want) {
		t.Fatalf("Take = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Take = %v, want %v (newest first)", got, want)
		}
	}
	if len(s.Take()) != 0 || s.Remove(0) {
		t.Fatal("the set is not empty after Take")
	}
}
