package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/cudart"
)

// upstreamEntry is the C++ name of upstream's reorder kernel (src/kernels.cu of NVIDIA/daqiri;
// the kernel is not extern "C", so its PTX entry is the mangled form of this name).
const upstreamEntry = "packet_reorder_copy_payload_by_sequence_kernel"

// upstreamKernel is upstream's reorder kernel loaded from a PTX (or cubin) that
// bench/reorder/upstream.sh compiled from upstream's own source, for a side-by-side run on
// the same inputs. It is only ever loaded by this benchmark: nothing of upstream's is built
// into the project.
type upstreamKernel struct {
	mod    *cudart.Module
	fn     *cudart.Function
	origin string // where the source came from (ORIGIN beside the PTX)
}

// loadUpstream loads upstream's kernel from path; ORIGIN in the same folder says where its
// source came from (repository, commit, compiler), as upstream.sh wrote it.
func loadUpstream(dev *cudart.Device, path string) (*upstreamKernel, error) {
	img, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name, err := ptxEntry(img, upstreamEntry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	origin, err := os.ReadFile(filepath.Join(filepath.Dir(path), "ORIGIN"))
	if err != nil {
		return nil, fmt.Errorf("upstream kernel %s: its ORIGIN (source repository and commit, written by bench/reorder/upstream.sh): %w", path, err)
	}
	m, err := dev.LoadModule(img)
	if err != nil {
		return nil, fmt.Errorf("upstream kernel %s: %w", path, err)
	}
	fn, err := m.Function(name)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &upstreamKernel{mod: m, fn: fn, origin: strings.Join(strings.Fields(string(origin)), " ")}, nil
}

// ptxEntry finds the PTX entry whose (mangled) name contains want.
func ptxEntry(ptx []byte, want string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(ptx))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.Contains(line, ".entry ") {
			continue
		}
		name := strings.TrimSpace(line[strings.Index(line, ".entry ")+len(".entry "):])
		if i := strings.IndexAny(name, "( \t"); i >= 0 {
			name = name[:i]
		}
		if strings.Contains(name, want) {
			return name, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no PTX entry named like %s", want)
}

// upstreamType is upstream's ReorderKernelDataType code of a sample type (kernels.cu:
// same 0, int4 1, int8 2, int16 3, int32 4, fp16 5, bf16 6, fp32 7, fp64 8).
func upstreamType(t config.DataType) uint8 {
	for i, n := range []config.DataType{"int4", "int8", "int16", "int32", "fp16", "bf16", "fp32", "fp64"} {
		if t == n {
			return uint8(i + 1)
		}
	}
	return 0
}

// upstreamArgs are the inputs of one upstream launch: num packets whose pointers are in
// device memory at ptrs, the 32-bit big-endian sequence number at bit 0 of each, payloads
// of inLen bytes payloadOff bytes in, each converted (in → out types, network byte order) or
// copied into its slot (seq mod num) of outLen bytes at out.
type upstreamArgs struct {
	out, ptrs, batchID cudart.DevicePtr
	inLen, outLen, num uint32
	payloadOff         uint32
	inType, outType    uint8
	stream             *cudart.Stream
}

// launch queues upstream's kernel as upstream's packet_reorder_copy_payload_by_sequence
// does: one block of 128 threads per packet.
func (u *upstreamKernel) launch(a upstreamArgs) error {
	cfg := cudart.LaunchConfig{Grid: cudart.Dim3{X: a.num}, Block: cudart.Dim3{X: 128}, Stream: a.stream}
	return u.fn.Launch(cfg,
		cudart.Ptr(a.out), cudart.Ptr(a.ptrs),
		cudart.U32(a.inLen), cudart.U32(a.outLen), cudart.U32(a.payloadOff), cudart.U32(a.num),
		cudart.U16(0), cudart.U8(32), // sequence: bits 0..31
		cudart.U16(0), cudart.U8(0), cudart.U8(0), // no batch number field: batch = seq / packets_per_batch
		cudart.U32(a.num), cudart.U32(a.num-1),
		cudart.U8(a.inType), cudart.U8(a.outType), cudart.U8(1), // network byte order
		cudart.Ptr(a.batchID))
}
