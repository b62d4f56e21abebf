package prm

// UMEMKeyVariant is the variant byte this project puts in the low byte of every key it makes
// over a UMEM (the key is index << 8 | variant; any value works, a fixed one reads well in
// traces).
const UMEMKeyVariant = 0xd5

// UMEMMKeyIn is CREATE_MKEY for a key over a whole UMEM at virtual address start, n bytes
// long: MTT access mode with mkey_umem_valid and no translations, as DPDK's
// mlx5_devx_cmd_mkey_create does for a UMEM; local read and write; usable by any QP (qpn
// 0xffffff); the protection domain pd (mlx5_ifc.h create_mkey_in, mkc). The key it makes is
// the output's index << 8 | UMEMKeyVariant.
func UMEMMKeyIn(pd, umem uint32, start, n uint64) []byte {
	base := CreateMKeyIn.MemoryKeyMKeyEntry.Off
	in := NewCmdIn(CmdOpCreateMKey, 0, CreateMKeyIn.KlmPASMtt.ByteOff())
	for _, kv := range []struct {
		f Field
		v uint64
	}{{MKC.AccessMode10, MKeyAccessMTT}, {MKC.Lr, 1}, {MKC.Lw, 1}, {MKC.PD, uint64(pd)}, {MKC.QPN, 0xffffff},
		{MKC.MKey70, UMEMKeyVariant}, {MKC.StartAddr, start}, {MKC.Len, n}} {
		kv.f.At(base).Set(in, kv.v)
	}
	CreateMKeyIn.MKeyUMEMValid.Set(in, 1)
	CreateMKeyIn.MKeyUMEMID.Set(in, uint64(umem))
	return in
}
