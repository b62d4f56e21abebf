package model

import (
	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// maxCmdLen bounds a command's input and output: the largest commands mlx5_core sends
// (MANAGE_PAGES with a long page list) fit the kernel's LONG_LIST_SIZE of about 4 MiB
// (cmd.c); the bound also bounds the mailbox walk.
const maxCmdLen = 4 << 20

// ringCmdDoorbell runs the command-queue entries whose bits are set in the doorbell word
// (init segment cmd_dbell; the kernel's cmd.c writes 1 << entry index), completes each one
// (status and ownership in the entry's last byte) and reports the completed entries in one
// command-completion EQE (event_data.command_completion_vector, MLX5_EVENT_TYPE_CMD) if an EQ
// asked for command events. The model executes synchronously: by the time the doorbell store
// returns, ownership is back with software, which both polling and event-driven drivers
// accept.
func (d *Device) ringCmdDoorbell(mask uint32) {
	d.mu.Lock()
	base := uint64(d.iseg.cmdqH)<<32 | uint64(d.iseg.cmdqL)
	d.mu.Unlock()
	if base == 0 {
		return // no command queue configured: the doorbell has nothing to act on
	}
	var done uint32
	before := d.eqsCreated()
	for i := 0; i < 1<<logCmdqSize; i++ {
		if mask&(1<<i) != 0 && d.runEntry(base+uint64(i)<<logCmdqStride) {
			done |= 1 << i
		}
	}
	if done != 0 {
		d.cmdCompletionEvent(done, before)
	}
}

// runEntry executes one command-queue entry at addr and reports whether it completed.
func (d *Device) runEntry(addr uint64) bool {
	ent, err := d.space.Slice(addr, cmdEntrySize, dma.Read|dma.Write)
	if err != nil {
		return false // the queue is not mapped: no place to report anything
	}
	q := prm.CmdQueueEntry
	if q.Ownership.Get(ent) != prm.CmdOwnerHW {
		return false // software owns it: a doorbell for an entry not handed over
	}
	st := d.deliver(ent)
	q.Status.Set(ent, uint64(st))
	iomem.ToDevice() // status and output before the ownership, as a device's ordered writes
	q.Ownership.Set(ent, prm.CmdOwnerSW)
	return true
}

// deliver gathers the input, executes the command and scatters the output; what it returns
// is the delivery status (kernel cmd.c MLX5_CMD_DELIVERY_STAT_*): whether the command could
// be carried at all. A command that ran has delivery status OK and its own status in the
// output.
func (d *Device) deliver(ent []byte) prm.DeliveryStatus {
	q := prm.CmdQueueEntry
	if q.Type.Get(ent) != prm.CmdQueueEntryTypePCIe {
		return prm.DeliveryCmdDescrErr
	}
	inLen := q.InputLength.Get(ent)
	outLen := q.OutputLength.Get(ent)
	if inLen > maxCmdLen {
		return prm.DeliveryInLengthErr
	}
	// The output must hold the status and syndrome (cmd_out, 8 bytes); it may be shorter
	// than the 16 inline bytes: mlx5_core sends ENABLE_HCA and DISABLE_HCA with the 12-byte
	// outputs mlx5_ifc.h gives them (main.c mlx5_core_enable_hca, MLX5_ST_SZ_DW(enable_hca_out)).
	if outLen > maxCmdLen || outLen < 8 {
		return prm.DeliveryOutLengthErr
	}
	token := uint8(q.Token.Get(ent))
	const inline = 16
	// The input grows block by block as the chain is read, so that a bogus length with a
	// short chain costs what the chain holds, not what the length claims.
	ib := q.CommandInputInlineData.ByteOff()
	in := append(make([]byte, 0, min(int(inLen), 1<<16)), ent[ib:ib+min(inline, int(inLen))]...)
	inPtr := q.InputMailboxPointerHi.Get(ent)<<32 | q.InputMailboxPointerLo.Get(ent)<<9
	if n := int(inLen) - inline; n > 0 {
		st := d.walkMailboxes(inPtr, n, token, func(data []byte) { in = append(in, data...) })
		if st = chainStatus(st, prm.DeliveryInPtrAlignErr); st != prm.DeliveryOK {
			return st
		}
	}
	// The output chain is checked before the command runs, so that a command whose output
	// cannot be delivered has no effect.
	outPtr := q.OutputMailboxPointerHi.Get(ent)<<32 | q.OutputMailboxPointerLo.Get(ent)<<9
	if n := int(outLen) - inline; n > 0 {
		if st := chainStatus(d.walkMailboxes(outPtr, n, token, nil), prm.DeliveryOutPtrAlignErr); st != prm.DeliveryOK {
			return st
		}
	}
	out := make([]byte, outLen)
	_ = d.execute(in, out) // the status is in out
	oo := q.CommandOutputInlineData.ByteOff()
	copy(ent[oo:oo+inline], out)
	if len(out) > inline {
		rest := out[inline:]
		d.walkMailboxes(outPtr, len(rest), token, func(data []byte) { rest = rest[copy(data, rest):] })
	}
	return prm.DeliveryOK
}

// walkMailboxes follows the mailbox chain at ptr (cmd_if_box: 512 data bytes, next pointer,
// block number, token) over n data bytes, calling fn with each block's data part. Each block
// must carry its index in the chain and the entry's token (kernel cmd.c numbers the blocks
// from 0 and stamps the token in each; the model checks both, as the delivery statuses
// BAD_BLK_NUM and TOK_ERR say firmware does).
func (d *Device) walkMailboxes(ptr uint64, n int, token uint8, fn func(data []byte)) prm.DeliveryStatus {
	b := prm.CmdIfBox
	for blk := uint64(0); n > 0; blk++ {
		box, err := d.space.Slice(ptr, mailboxSize, dma.Read|dma.Write)
		if err != nil {
			return prm.DeliveryFWErr
		}
		if b.BlockNumber.Get(box) != blk {
			return prm.DeliveryBadBlockNumErr
		}
		if uint8(b.Token.Get(box)) != token {
			return prm.DeliveryTokenErr
		}
		k := min(n, prm.CmdDataBlockSize)
		if fn != nil {
			fn(box[:k])
		}
		n -= k
		ptr = b.NextPointerHi.Get(box)<<32 | b.NextPointerLo.Get(box)<<10
		if n > 0 && ptr == 0 {
			return prm.DeliveryFWErr
		}
	}
	return prm.DeliveryOK
}

// chainStatus maps a mailbox walk's failure to the delivery status the entry reports: block
// number and token errors as such; a chain the model cannot follow (unmapped, cut short) as
// the pointer error of its direction, the nearest status cmd.c names (inferred).
func chainStatus(st, pointerErr prm.DeliveryStatus) prm.DeliveryStatus {
	if st == prm.DeliveryOK || st == prm.DeliveryBadBlockNumErr || st == prm.DeliveryTokenErr {
		return st
	}
	return pointerErr
}
