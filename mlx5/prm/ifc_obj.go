package prm

// UAR, PD, transport domain, memory key and UMEM objects. Offsets and widths in bits, as gcc lays
// out include/linux/mlx5/mlx5_ifc.h (Linux 6.1); TestLayout checks every one against the installed
// headers.

// AllocUARIn is ALLOC_UAR input (mlx5_ifc.h struct mlx5_ifc_alloc_uar_in_bits).
var AllocUARIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_uar_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_uar_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_uar_in", "op_mod", 0x30, 16),
}

// AllocUAROut is ALLOC_UAR output (mlx5_ifc.h struct mlx5_ifc_alloc_uar_out_bits).
var AllocUAROut = struct {
	Status   Field
	Syndrome Field
	UAR      Field
}{
	Status:   ifcField("alloc_uar_out", "status", 0x0, 8),
	Syndrome: ifcField("alloc_uar_out", "syndrome", 0x20, 32),
	UAR:      ifcField("alloc_uar_out", "uar", 0x48, 24),
}

// DeallocUARIn is DEALLOC_UAR input (mlx5_ifc.h struct mlx5_ifc_dealloc_uar_in_bits).
var DeallocUARIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	UAR    Field
}{
	Opcode: ifcField("dealloc_uar_in", "opcode", 0x0, 16),
	UID:    ifcField("dealloc_uar_in", "uid", 0x10, 16),
	OpMod:  ifcField("dealloc_uar_in", "op_mod", 0x30, 16),
	UAR:    ifcField("dealloc_uar_in", "uar", 0x48, 24),
}

// AllocPDIn is ALLOC_PD input (mlx5_ifc.h struct mlx5_ifc_alloc_pd_in_bits).
var AllocPDIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_pd_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_pd_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_pd_in", "op_mod", 0x30, 16),
}

// AllocPDOut is ALLOC_PD output (mlx5_ifc.h struct mlx5_ifc_alloc_pd_out_bits).
var AllocPDOut = struct {
	Status   Field
	Syndrome Field
	PD       Field
}{
	Status:   ifcField("alloc_pd_out", "status", 0x0, 8),
	Syndrome: ifcField("alloc_pd_out", "syndrome", 0x20, 32),
	PD:       ifcField("alloc_pd_out", "pd", 0x48, 24),
}

// DeallocPDIn is DEALLOC_PD input (mlx5_ifc.h struct mlx5_ifc_dealloc_pd_in_bits).
var DeallocPDIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	PD     Field
}{
	Opcode: ifcField("dealloc_pd_in", "opcode", 0x0, 16),
	UID:    ifcField("dealloc_pd_in", "uid", 0x10, 16),
	OpMod:  ifcField("dealloc_pd_in", "op_mod", 0x30, 16),
	PD:     ifcField("dealloc_pd_in", "pd", 0x48, 24),
}

// AllocTransportDomainIn is ALLOC_TRANSPORT_DOMAIN input (mlx5_ifc.h struct
// mlx5_ifc_alloc_transport_domain_in_bits).
var AllocTransportDomainIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
}{
	Opcode: ifcField("alloc_transport_domain_in", "opcode", 0x0, 16),
	UID:    ifcField("alloc_transport_domain_in", "uid", 0x10, 16),
	OpMod:  ifcField("alloc_transport_domain_in", "op_mod", 0x30, 16),
}

// AllocTransportDomainOut is ALLOC_TRANSPORT_DOMAIN output (mlx5_ifc.h struct
// mlx5_ifc_alloc_transport_domain_out_bits).
var AllocTransportDomainOut = struct {
	Status          Field
	Syndrome        Field
	TransportDomain Field
}{
	Status:          ifcField("alloc_transport_domain_out", "status", 0x0, 8),
	Syndrome:        ifcField("alloc_transport_domain_out", "syndrome", 0x20, 32),
	TransportDomain: ifcField("alloc_transport_domain_out", "transport_domain", 0x48, 24),
}

// DeallocTransportDomainIn is DEALLOC_TRANSPORT_DOMAIN input (mlx5_ifc.h struct
// mlx5_ifc_dealloc_transport_domain_in_bits).
var DeallocTransportDomainIn = struct {
	Opcode          Field
	UID             Field
	OpMod           Field
	TransportDomain Field
}{
	Opcode:          ifcField("dealloc_transport_domain_in", "opcode", 0x0, 16),
	UID:             ifcField("dealloc_transport_domain_in", "uid", 0x10, 16),
	OpMod:           ifcField("dealloc_transport_domain_in", "op_mod", 0x30, 16),
	TransportDomain: ifcField("dealloc_transport_domain_in", "transport_domain", 0x48, 24),
}

// MKC is the memory key context (mlx5_ifc.h struct mlx5_ifc_mkc_bits).
var MKC = struct {
	Free                         Field
	AccessMode42                 Field
	RelaxedOrderingWrite         Field
	SmallFenceOnRdmaReadResponse Field
	UmrEn                        Field
	A                            Field
	Rw                           Field
	Rr                           Field
	Lw                           Field
	Lr                           Field
	AccessMode10                 Field
	MaTranslationMode            Field
	QPN                          Field
	MKey70                       Field
	Length64                     Field
	BsfEn                        Field
	SyncUmr                      Field
	ExpectedSigerrCount          Field
	EnRinval                     Field
	PD                           Field
	StartAddr                    Field
	Len                          Field
	BsfOctwordSize               Field
	TranslationsOctwordSize      Field
	RelaxedOrderingRead          Field
	LogPageSize                  Field
}{
	Free:                         ifcField("mkc", "free", 0x1, 1),
	AccessMode42:                 ifcField("mkc", "access_mode_4_2", 0x3, 3),
	RelaxedOrderingWrite:         ifcField("mkc", "relaxed_ordering_write", 0xd, 1),
	SmallFenceOnRdmaReadResponse: ifcField("mkc", "small_fence_on_rdma_read_response", 0xf, 1),
	UmrEn:                        ifcField("mkc", "umr_en", 0x10, 1),
	A:                            ifcField("mkc", "a", 0x11, 1),
	Rw:                           ifcField("mkc", "rw", 0x12, 1),
	Rr:                           ifcField("mkc", "rr", 0x13, 1),
	Lw:                           ifcField("mkc", "lw", 0x14, 1),
	Lr:                           ifcField("mkc", "lr", 0x15, 1),
	AccessMode10:                 ifcField("mkc", "access_mode_1_0", 0x16, 2),
	MaTranslationMode:            ifcField("mkc", "ma_translation_mode", 0x1a, 2),
	QPN:                          ifcField("mkc", "qpn", 0x20, 24),
	MKey70:                       ifcField("mkc", "mkey_7_0", 0x38, 8),
	Length64:                     ifcField("mkc", "length64", 0x60, 1),
	BsfEn:                        ifcField("mkc", "bsf_en", 0x61, 1),
	SyncUmr:                      ifcField("mkc", "sync_umr", 0x62, 1),
	ExpectedSigerrCount:          ifcField("mkc", "expected_sigerr_count", 0x65, 1),
	EnRinval:                     ifcField("mkc", "en_rinval", 0x67, 1),
	PD:                           ifcField("mkc", "pd", 0x68, 24),
	StartAddr:                    ifcField("mkc", "start_addr", 0x80, 64),
	Len:                          ifcField("mkc", "len", 0xc0, 64),
	BsfOctwordSize:               ifcField("mkc", "bsf_octword_size", 0x100, 32),
	TranslationsOctwordSize:      ifcField("mkc", "translations_octword_size", 0x1a0, 32),
	RelaxedOrderingRead:          ifcField("mkc", "relaxed_ordering_read", 0x1d9, 1),
	LogPageSize:                  ifcField("mkc", "log_page_size", 0x1db, 5),
}

// CreateMKeyIn is CREATE_MKEY input (mlx5_ifc.h struct mlx5_ifc_create_mkey_in_bits).
var CreateMKeyIn = struct {
	Opcode                        Field
	UID                           Field
	OpMod                         Field
	PgAccess                      Field
	MKeyUMEMValid                 Field
	MemoryKeyMKeyEntry            Field
	TranslationsOctwordActualSize Field
	KlmPASMtt                     Field
}{
	Opcode:                        ifcField("create_mkey_in", "opcode", 0x0, 16),
	UID:                           ifcField("create_mkey_in", "uid", 0x10, 16),
	OpMod:                         ifcField("create_mkey_in", "op_mod", 0x30, 16),
	PgAccess:                      ifcField("create_mkey_in", "pg_access", 0x60, 1),
	MKeyUMEMValid:                 ifcField("create_mkey_in", "mkey_umem_valid", 0x61, 1),
	MemoryKeyMKeyEntry:            ifcField("create_mkey_in", "memory_key_mkey_entry", 0x80, 512),
	TranslationsOctwordActualSize: ifcField("create_mkey_in", "translations_octword_actual_size", 0x300, 32),
	KlmPASMtt:                     ifcField("create_mkey_in", "klm_pas_mtt[0]", 0x880, 32),
}

// CreateMKeyOut is CREATE_MKEY output (mlx5_ifc.h struct mlx5_ifc_create_mkey_out_bits).
var CreateMKeyOut = struct {
	Status    Field
	Syndrome  Field
	MKeyIndex Field
}{
	Status:    ifcField("create_mkey_out", "status", 0x0, 8),
	Syndrome:  ifcField("create_mkey_out", "syndrome", 0x20, 32),
	MKeyIndex: ifcField("create_mkey_out", "mkey_index", 0x48, 24),
}

// DestroyMKeyIn is DESTROY_MKEY input (mlx5_ifc.h struct mlx5_ifc_destroy_mkey_in_bits).
var DestroyMKeyIn = struct {
	Opcode    Field
	UID       Field
	OpMod     Field
	MKeyIndex Field
}{
	Opcode:    ifcField("destroy_mkey_in", "opcode", 0x0, 16),
	UID:       ifcField("destroy_mkey_in", "uid", 0x10, 16),
	OpMod:     ifcField("destroy_mkey_in", "op_mod", 0x30, 16),
	MKeyIndex: ifcField("destroy_mkey_in", "mkey_index", 0x48, 24),
}

// QueryMKeyIn is QUERY_MKEY input (mlx5_ifc.h struct mlx5_ifc_query_mkey_in_bits).
var QueryMKeyIn = struct {
	Opcode    Field
	OpMod     Field
	MKeyIndex Field
	PgAccess  Field
}{
	Opcode:    ifcField("query_mkey_in", "opcode", 0x0, 16),
	OpMod:     ifcField("query_mkey_in", "op_mod", 0x30, 16),
	MKeyIndex: ifcField("query_mkey_in", "mkey_index", 0x48, 24),
	PgAccess:  ifcField("query_mkey_in", "pg_access", 0x60, 1),
}

// QueryMKeyOut is QUERY_MKEY output (mlx5_ifc.h struct mlx5_ifc_query_mkey_out_bits).
var QueryMKeyOut = struct {
	Status             Field
	Syndrome           Field
	MemoryKeyMKeyEntry Field
	Bsf0Klm0PASMtt01   Field
	Bsf1Klm1PASMtt23   Field
}{
	Status:             ifcField("query_mkey_out", "status", 0x0, 8),
	Syndrome:           ifcField("query_mkey_out", "syndrome", 0x20, 32),
	MemoryKeyMKeyEntry: ifcField("query_mkey_out", "memory_key_mkey_entry", 0x80, 512),
	Bsf0Klm0PASMtt01:   ifcField("query_mkey_out", "bsf0_klm0_pas_mtt0_1[0]", 0x880, 8),
	Bsf1Klm1PASMtt23:   ifcField("query_mkey_out", "bsf1_klm1_pas_mtt2_3[0]", 0x900, 8),
}

// UMEM is the UMEM object (a registered user memory region) of CREATE_GENERAL_OBJECT (mlx5_ifc.h
// struct mlx5_ifc_umem_bits).
var UMEM = struct {
	ATS         Field
	LogPageSize Field
	PageOffset  Field
	NumOfMtt    Field
	Mtt         Field
}{
	ATS:         ifcField("umem", "ats", 0x80, 1),
	LogPageSize: ifcField("umem", "log_page_size", 0x9b, 5),
	PageOffset:  ifcField("umem", "page_offset", 0xa0, 32),
	NumOfMtt:    ifcField("umem", "num_of_mtt", 0xc0, 64),
	Mtt:         ifcField("umem", "mtt[0]", 0x100, 64),
}

// CreateUMEMIn is CREATE_GENERAL_OBJECT(UMEM) input (mlx5_ifc.h struct
// mlx5_ifc_create_umem_in_bits).
var CreateUMEMIn = struct {
	Opcode Field
	UID    Field
	OpMod  Field
	UMEM   Field
}{
	Opcode: ifcField("create_umem_in", "opcode", 0x0, 16),
	UID:    ifcField("create_umem_in", "uid", 0x10, 16),
	OpMod:  ifcField("create_umem_in", "op_mod", 0x30, 16),
	UMEM:   ifcField("create_umem_in", "umem", 0x80, 256),
}

// CreateUMEMOut is CREATE_GENERAL_OBJECT(UMEM) output (mlx5_ifc.h struct
// mlx5_ifc_create_umem_out_bits).
var CreateUMEMOut = struct {
	Status   Field
	Syndrome Field
	UMEMID   Field
}{
	Status:   ifcField("create_umem_out", "status", 0x0, 8),
	Syndrome: ifcField("create_umem_out", "syndrome", 0x20, 32),
	UMEMID:   ifcField("create_umem_out", "umem_id", 0x48, 24),
}

// MTT is one memory translation table entry (a page address) (mlx5_ifc.h struct
// mlx5_ifc_mtt_bits).
var MTT = struct {
	PtagHi Field
	PtagLo Field
	WrEn   Field
	RdEn   Field
}{
	PtagHi: ifcField("mtt", "ptag_63_32", 0x0, 32),
	PtagLo: ifcField("mtt", "ptag_31_8", 0x20, 24),
	WrEn:   ifcField("mtt", "wr_en", 0x3e, 1),
	RdEn:   ifcField("mtt", "rd_en", 0x3f, 1),
}
