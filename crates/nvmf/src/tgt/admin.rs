//! Admin commands: Identify, Get Log Page, Set/Get Features, Keep Alive and
//! Asynchronous Event Request, for NVM and discovery controllers.

use std::sync::atomic::Ordering::Relaxed;

use nvme_spec::ana::LSP_RGO;
use nvme_spec::command::admin;
use nvme_spec::features::{fid, NumQueues};
use nvme_spec::identify::{self, cns, nidt, IdentifyController, IdentifyNamespace};
use nvme_spec::log::{self, lid, DiscoveryEntry, GetLogPage, SmartLog};
use nvme_spec::Status;

use super::ana::{ANATT_SECONDS, ANA_GROUP};
use super::command::{Ctx, Outcome};
use super::config::Limits;
use super::fabrics::NVME_VERSION;
use super::subsystem::{Controller, Target, AEC_NS_ATTRIBUTE, ERROR_LOG_ENTRIES};

/// Outstanding AERs per controller (AERL + 1).
pub const AER_LIMIT: usize = 4;

/// Runs an admin command on a bound admin queue (the queue counts it as a
/// keep-alive).
pub fn execute(ctx: &mut Ctx<'_>) -> Outcome {
    let sqe = ctx.sqe();
    let ctrl = ctx.ctrl().clone();
    let discovery = ctrl.subsys.is_discovery;
    match sqe.opcode {
        admin::IDENTIFY => identify(ctx, &ctrl),
        admin::GET_LOG_PAGE => get_log_page(ctx, &ctrl),
        admin::SET_FEATURES => set_features(&ctx.target.limits, &ctrl, sqe.cdw10, sqe.cdw11),
        admin::GET_FEATURES => get_features(&ctx.target.limits, &ctrl, sqe.cdw10),
        admin::KEEP_ALIVE => Outcome::ok(0),
        admin::ASYNC_EVENT if ctx.events_waiting >= AER_LIMIT => Outcome::err(Status::AER_LIMIT),
        admin::ASYNC_EVENT => Outcome::Deferred,
        admin::ABORT if !discovery => Outcome::ok(1), // bit 0: command not aborted
        _ => Outcome::err(Status::INVALID_OPCODE),
    }
}

fn identify(ctx: &mut Ctx<'_>, ctrl: &Controller) -> Outcome {
    let sqe = ctx.sqe();
    let cns_val = (sqe.cdw10 & 0xFF) as u8;
    let subsys = &ctrl.subsys;
    if subsys.is_discovery && cns_val != cns::CONTROLLER {
        return Outcome::err(Status::INVALID_FIELD);
    }
    let data = match cns_val {
        cns::CONTROLLER => {
            let rdma = ctx
                .target
                .port(ctrl.port)
                .is_some_and(|p| p.transport == super::port::Transport::Rdma);
            identify_controller(&ctx.target.limits, ctrl, rdma).encode()
        }
        cns::NAMESPACE => {
            let Some(ns) = subsys.namespace(sqe.nsid) else {
                return Outcome::err(Status::INVALID_NS);
            };
            IdentifyNamespace {
                nsze: ns.blocks(),
                ncap: ns.blocks(),
                nuse: ns.blocks(),
                nsfeat: 0,
                nmic: 1,
                dlfeat: 0x09,
                nguid: ns.nguid,
                lbads: ns.lbads(),
                anagrpid: ANA_GROUP,
            }
            .encode()
        }
        cns::ACTIVE_NS_LIST => {
            if sqe.nsid >= 0xFFFF_FFFE {
                return Outcome::err(Status::INVALID_NS);
            }
            let ids: Vec<u32> = subsys.namespaces.iter().map(|n| n.nsid).collect();
            identify::encode_ns_list(&ids, sqe.nsid)
        }
        cns::NS_DESC_LIST => {
            let Some(ns) = subsys.namespace(sqe.nsid) else {
                return Outcome::err(Status::INVALID_NS);
            };
            identify::encode_ns_descriptors(&[
                (nidt::NGUID, &ns.nguid),
                (nidt::UUID, &ns.uuid),
                (nidt::CSI, &[0]),
            ])
        }
        // NVM command set specific controller data: no limits to report.
        cns::CS_CONTROLLER if sqe.cdw11 >> 24 == 0 => vec![0u8; identify::IDENTIFY_SIZE],
        _ => return Outcome::err(Status::INVALID_FIELD),
    };
    ctx.reply(&data)
}

fn identify_controller(limits: &Limits, ctrl: &Controller, rdma: bool) -> IdentifyController {
    let subsys = &ctrl.subsys;
    let disc = subsys.is_discovery;
    IdentifyController {
        vid: 0,
        serial: subsys.serial.clone(),
        model: subsys.model.clone(),
        firmware: env!("CARGO_PKG_VERSION").chars().take(8).collect(),
        // Several controllers (one per port and host) with ANA reporting.
        cmic: if disc { 0 } else { 0x02 | identify::CMIC_ANA },
        mdts: limits.mdts(),
        cntlid: ctrl.cntlid,
        ver: NVME_VERSION,
        // Namespace Attribute Notices (a resized file or device namespace)
        // and ANA Change notices (a port's state changed).
        oaes: if disc {
            0
        } else {
            AEC_NS_ATTRIBUTE | identify::OAES_ANA_CHANGE
        },
        cntrltype: if disc {
            identify::CNTRLTYPE_DISCOVERY
        } else {
            identify::CNTRLTYPE_IO
        },
        acl: 3,
        aerl: (AER_LIMIT - 1) as u8,
        lpa: 0x04,
        elpe: (ERROR_LOG_ENTRIES - 1) as u8,
        kas: 10,
        maxcmd: if disc {
            limits.admin_queue_depth
        } else {
            limits.max_queue_depth
        },
        nn: subsys.namespaces.max_nsid(),
        oncs: if disc {
            0
        } else {
            identify::ONCS_DSM | identify::ONCS_WRITE_ZEROES
        },
        vwc: if disc { 0 } else { 1 },
        // Keyed SGL data blocks where the controller was connected over
        // RDMA (NVMe/RDMA's data pointers).
        sgls: identify::SGLS_SUPPORTED
            | identify::SGLS_OFFSET
            | if rdma { nvme_spec::rdma::SGLS_KEYED } else { 0 },
        anatt: if disc { 0 } else { ANATT_SECONDS },
        anacap: if disc {
            0
        } else {
            identify::ANACAP_OPTIMIZED
                | identify::ANACAP_NON_OPTIMIZED
                | identify::ANACAP_INACCESSIBLE
                | identify::ANACAP_PERSISTENT_LOSS
                | identify::ANACAP_CHANGE
                | identify::ANACAP_GRPID_STATIC
        },
        anagrpmax: if disc { 0 } else { ANA_GROUP },
        nanagrpid: if disc { 0 } else { 1 },
        mnan: if disc {
            0
        } else {
            subsys.namespaces.max_nsid()
        },
        subnqn: subsys.nqn.clone(),
        ioccsz: if disc {
            0
        } else {
            (64 + limits.io_in_capsule_bytes) / 16
        },
        iorcsz: if disc { 0 } else { 1 },
        icdoff: 0,
        msdbd: 1,
    }
}

fn get_log_page(ctx: &mut Ctx<'_>, ctrl: &Controller) -> Outcome {
    let g = GetLogPage::from_sqe(&ctx.req.sqe);
    let page = match (g.lid, ctrl.subsys.is_discovery) {
        (lid::DISCOVERY, true) => discovery_log(ctx.target, ctrl),
        (lid::DISCOVERY, false) | (_, true) => return Outcome::err(Status::INVALID_LOG_PAGE),
        (lid::ERROR_INFO, false) => {
            let regs = ctrl.regs.lock().expect("controller lock");
            regs.errors.iter().rev().flat_map(|e| e.encode()).collect()
        }
        (lid::SMART, false) => {
            let s = &ctrl.stats;
            SmartLog {
                temperature_k: 310,
                avail_spare_pct: 100,
                read_bytes: s.read_bytes.load(Relaxed),
                written_bytes: s.written_bytes.load(Relaxed),
                host_reads: s.reads.load(Relaxed),
                host_writes: s.writes.load(Relaxed),
                power_on_hours: 0,
                error_entries: ctrl.regs.lock().expect("controller lock").error_count,
            }
            .encode()
        }
        (lid::FW_SLOT, false) => {
            let mut b = vec![0u8; 512];
            b[0] = 1; // active slot 1
            nvme_spec::bytes::put_ascii_padded(&mut b, 8, 8, env!("CARGO_PKG_VERSION"));
            b
        }
        (lid::CHANGED_NS, false) => ctrl.changed_ns_log(g.rae),
        (lid::ANA, false) => ctrl.ana_log(ctx.target, g.lsp & LSP_RGO != 0, g.rae),
        _ => return Outcome::err(Status::INVALID_LOG_PAGE),
    };
    if g.offset_bytes % 4 != 0 || (g.offset_bytes > 0 && g.offset_bytes >= page.len() as u64) {
        return Outcome::err(Status::INVALID_FIELD);
    }
    let start = g.offset_bytes as usize;
    let want = (g.len_bytes as usize).min(ctx.req.buf.len());
    let mut out = vec![0u8; want];
    let avail = page.len().saturating_sub(start).min(want);
    out[..avail].copy_from_slice(&page[start..start + avail]);
    ctx.reply(&out)
}

fn discovery_log(t: &Target, ctrl: &Controller) -> Vec<u8> {
    let mut entries = Vec::new();
    for s in t
        .subsystems
        .iter()
        .filter(|s| s.host_allowed(&ctrl.hostnqn))
    {
        for (i, p) in t.ports.iter().enumerate() {
            let l = &p.addr;
            let rdma = p.transport == super::port::Transport::Rdma;
            entries.push(DiscoveryEntry {
                trtype: if rdma {
                    log::TRTYPE_RDMA
                } else {
                    log::TRTYPE_TCP
                },
                adrfam: if l.is_ipv4() {
                    log::ADRFAM_IPV4
                } else {
                    log::ADRFAM_IPV6
                },
                subtype: log::SUBTYPE_NVME,
                treq: if t.tls.is_some() && !rdma {
                    log::TREQ_SECURE_CHANNEL_REQUIRED
                } else {
                    0
                },
                portid: i as u16 + 1,
                cntlid: nvme_spec::fabrics::CNTLID_DYNAMIC,
                asqsz: t.limits.admin_queue_depth,
                trsvcid: l.port().to_string(),
                subnqn: s.nqn.clone(),
                traddr: l.ip().to_string(),
                tcp_sectype: if t.tls.is_some() && !rdma {
                    log::TCP_SECTYPE_TLS13
                } else {
                    0
                },
            });
        }
    }
    log::encode_discovery_log(t.discovery_genctr.load(Relaxed), &entries)
}

fn set_features(limits: &Limits, ctrl: &Controller, cdw10: u32, cdw11: u32) -> Outcome {
    if cdw10 & (1 << 31) != 0 {
        return Outcome::err(Status::FEATURE_NOT_SAVEABLE);
    }
    let disc = ctrl.subsys.is_discovery;
    let mut regs = ctrl.regs.lock().expect("controller lock");
    match (cdw10 & 0xFF) as u8 {
        fid::NUM_QUEUES if !disc => {
            let want = NumQueues::decode(cdw11);
            if want.nsq > 0xFFFF || want.ncq > 0xFFFF {
                return Outcome::err(Status::INVALID_FIELD);
            }
            let max = limits.max_io_queues as u32;
            let granted = want.nsq.min(want.ncq).min(max);
            regs.io_queues_granted = granted as u16;
            Outcome::ok(
                NumQueues {
                    nsq: granted,
                    ncq: granted,
                }
                .encode() as u64,
            )
        }
        fid::KATO => {
            // The timer restarts: the queue counts this command as a
            // keep-alive.
            ctrl.kato_ms.store(cdw11, Relaxed);
            Outcome::ok(0)
        }
        fid::ASYNC_EVENT => {
            regs.aec = cdw11;
            Outcome::ok(0)
        }
        fid::VOLATILE_WC if !disc => Outcome::ok(0),
        // Interrupt coalescing and vector configuration do not apply to fabrics.
        _ => Outcome::err(Status::INVALID_FIELD),
    }
}

fn get_features(limits: &Limits, ctrl: &Controller, cdw10: u32) -> Outcome {
    let sel = (cdw10 >> 8) & 7;
    let f = (cdw10 & 0xFF) as u8;
    let disc = ctrl.subsys.is_discovery;
    let regs = ctrl.regs.lock().expect("controller lock");
    let changeable = matches!(f, fid::NUM_QUEUES | fid::KATO | fid::ASYNC_EVENT);
    let v = match f {
        fid::NUM_QUEUES if !disc => {
            let n = match regs.io_queues_granted {
                0 => limits.max_io_queues as u32,
                g => g as u32,
            };
            NumQueues { nsq: n, ncq: n }.encode()
        }
        fid::KATO => ctrl.kato_ms.load(Relaxed),
        fid::ASYNC_EVENT => regs.aec,
        fid::VOLATILE_WC if !disc => 1,
        fid::ARBITRATION | fid::POWER_MGMT | fid::ERROR_RECOVERY if !disc => 0,
        fid::TEMP_THRESHOLD if !disc => 343,
        _ => return Outcome::err(Status::INVALID_FIELD),
    };
    if sel == 3 {
        return Outcome::ok(if changeable { 0b100 } else { 0 });
    }
    Outcome::ok(v as u64)
}
