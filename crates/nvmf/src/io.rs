//! NVM I/O commands: Read, Write, Flush, Write Zeroes, Dataset Management.
//! Runs on the reactor that owns the queue; the namespace is shared by fd.

use nvme_spec::command::{io, DsmRange};
use nvme_spec::Status;

use crate::namespace::{Namespace, BLOCK_SIZE_BYTES};
use crate::queue::Connection;
use crate::request::{Outcome, Request};

/// Most ranges one DSM command may carry.
pub const DSM_MAX_RANGES: usize = 256;

/// Runs an I/O command.
pub fn execute(conn: &mut Connection, slot: usize) -> Outcome {
    let ctrl = conn
        .binding
        .as_ref()
        .expect("I/O queue is bound")
        .ctrl
        .clone();
    let sqe = conn.reqs[slot].sqe;
    if sqe.opcode == io::FLUSH && sqe.nsid == 0xFFFF_FFFF {
        for ns in &ctrl.subsys.namespaces {
            if ns.flush().is_err() {
                return Outcome::err(Status::INTERNAL_ERROR);
            }
        }
        return Outcome::ok(0);
    }
    let Some(ns) = ctrl.subsys.namespace(sqe.nsid) else {
        return Outcome::err(Status::INVALID_NS);
    };
    match sqe.opcode {
        io::READ | io::WRITE => read_write(conn, slot, ns),
        io::FLUSH => ns.flush().map_or_else(io_err, |_| Outcome::ok(0)),
        io::WRITE_ZEROES => {
            let nlb = sqe.nlb() as u64;
            if !ns.in_range(sqe.slba(), nlb) {
                return Outcome::err(Status::LBA_RANGE);
            }
            ns.zero(sqe.slba(), nlb)
                .map_or_else(io_err, |_| Outcome::ok(0))
        }
        io::DSM => dataset_management(&conn.reqs[slot], ns),
        _ => Outcome::err(Status::INVALID_OPCODE),
    }
}

fn io_err(_: std::io::Error) -> Outcome {
    Outcome::err(Status::INTERNAL_ERROR)
}

fn read_write(conn: &mut Connection, slot: usize, ns: &Namespace) -> Outcome {
    let r = &mut conn.reqs[slot];
    let sqe = r.sqe;
    let nlb = sqe.nlb() as u64;
    if !ns.in_range(sqe.slba(), nlb) {
        return Outcome::err(Status::LBA_RANGE);
    }
    let len = nlb * BLOCK_SIZE_BYTES;
    if len != r.len_bytes as u64 {
        return Outcome::err(Status::SGL_LENGTH_INVALID);
    }
    if sqe.opcode == io::READ {
        if let Err(e) = ns.read(sqe.slba(), &mut r.buf[..len as usize]) {
            return io_err(e);
        }
        conn.counters.reads += 1;
        conn.counters.read_bytes += len;
        Outcome::data(len as usize)
    } else {
        if let Err(e) = ns.write(sqe.slba(), &r.buf[..len as usize]) {
            return io_err(e);
        }
        conn.counters.writes += 1;
        conn.counters.written_bytes += len;
        Outcome::ok(0)
    }
}

fn dataset_management(r: &Request, ns: &Namespace) -> Outcome {
    let sqe = r.sqe;
    let nr = (sqe.cdw10 & 0xFF) as usize + 1;
    if nr > DSM_MAX_RANGES || r.buf.len() < nr * io::DSM_RANGE_SIZE {
        return Outcome::err(Status::SGL_LENGTH_INVALID);
    }
    if sqe.cdw11 & io::DSM_ATTR_DEALLOCATE == 0 {
        return Outcome::ok(0);
    }
    let ranges: Vec<DsmRange> = r.buf[..nr * io::DSM_RANGE_SIZE]
        .chunks_exact(io::DSM_RANGE_SIZE)
        .map(DsmRange::decode)
        .collect();
    if ranges.iter().any(|d| !ns.in_range(d.slba, d.nlb as u64)) {
        return Outcome::err(Status::LBA_RANGE);
    }
    for d in ranges.iter().filter(|d| d.nlb > 0) {
        if let Err(e) = ns.zero(d.slba, d.nlb as u64) {
            return io_err(e);
        }
    }
    Outcome::ok(0)
}
