package prm

// IBObject names the fields of the commands mlx5_ib sends at probe for objects the model keeps
// only as numbers (QPs, XRC domains and SRQs, RMPs, user contexts) and of its P_Key query
// (mlx5_ifc.h). Every create output of those kinds has its number where create_qp_out has
// qpn, and every destroy or QP state change input names it where destroy_qp_in does.
var IBObject = struct {
	QPNOut      Field
	QPNIn       Field
	UctxUIDOut  Field
	UctxUIDIn   Field
	PkeyIndexIn Field
	Pkey0Out    Field
}{
	QPNOut:      ifcField("create_qp_out", "qpn", 0x48, 24),
	QPNIn:       ifcField("destroy_qp_in", "qpn", 0x48, 24),
	UctxUIDOut:  ifcField("create_uctx_out", "uid", 0x50, 16),
	UctxUIDIn:   ifcField("destroy_uctx_in", "uid", 0x50, 16),
	PkeyIndexIn: ifcField("query_hca_vport_pkey_in", "pkey_index", 0x70, 16),
	Pkey0Out:    ifcField("query_hca_vport_pkey_out", "pkey[0].pkey", 0x90, 16),
}
