//! The committed bindings (`ffi.rs`) against the rdma-core headers
//! installed here, by the C compiler: the size and alignment of every struct
//! and union they declare, the offset and size of every field (those of
//! anonymous members included, by their C path), the value of every
//! constant, and the prototype of every function in the two tables.
//!
//! The Rust side is `size_of`, `align_of`, `offset_of!` and the constants
//! themselves, over the list in [`rust_values`]; that list is checked to
//! name exactly what `ffi.rs` declares, so a regenerated file cannot go
//! unchecked. Where the headers (`apt install libibverbs-dev
//! librdmacm-dev`) or `cc` are missing the test says why and passes, except
//! with `CI=true`, where it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};
use std::path::Path;
use std::process::Command;

use super::ffi;

const FFI: &str = include_str!("ffi.rs");
const HEADERS: [&str; 2] = ["infiniband/verbs.h", "rdma/rdma_cma.h"];

/// The size of what a field projection points to (the closure is never
/// called: it only names the field's type).
fn field_size<T, F>(_: fn(*const T) -> *const F) -> usize {
    size_of::<F>()
}

/// `(type, field path)` to `(offset, size)`, or `(type, "")` to `(size,
/// align)`.
type Layouts = BTreeMap<(String, String), (usize, usize)>;

/// [`Layouts`] of each type and field listed.
macro_rules! layouts {
    ($($t:ident { $($($f:ident).+),* $(,)? })*) => {{
        let mut m = Layouts::new();
        $(
            m.insert(
                (stringify!($t).to_string(), String::new()),
                (size_of::<ffi::$t>(), align_of::<ffi::$t>()),
            );
            $(
                m.insert(
                    (stringify!($t).to_string(), stringify!($($f).+).replace(' ', "")),
                    (
                        offset_of!(ffi::$t, $($f).+),
                        field_size(|p: *const ffi::$t| {
                            // SAFETY: never called (field_size only takes
                            // the type); a raw place projection reads
                            // nothing.
                            unsafe { &raw const (*p).$($f).+ }
                        }),
                    ),
                );
            )*
        )*
        m
    }};
}

/// Each constant's value.
macro_rules! constants {
    ($($c:ident),* $(,)?) => {{
        let mut m: BTreeMap<String, i128> = BTreeMap::new();
        $(m.insert(stringify!($c).to_string(), ffi::$c as i128);)*
        m
    }};
}

/// What Rust makes of the bindings: every struct and union of `ffi.rs`
/// with each of its fields (through anonymous members, by bindgen's
/// `__bindgen_anon_N` names), and every constant.
fn rust_values() -> (Layouts, BTreeMap<String, i128>) {
    let layouts = layouts! {
        ibv_ah {}
        ibv_comp_channel { context, fd, refcnt }
        ibv_context { device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat }
        ibv_context_ops {
            _compat_query_device, _compat_query_port, _compat_alloc_pd, _compat_dealloc_pd,
            _compat_reg_mr, _compat_rereg_mr, _compat_dereg_mr, alloc_mw, bind_mw, dealloc_mw,
            _compat_create_cq, poll_cq, req_notify_cq, _compat_cq_event, _compat_resize_cq,
            _compat_destroy_cq, _compat_create_srq, _compat_modify_srq, _compat_query_srq,
            _compat_destroy_srq, post_srq_recv, _compat_create_qp, _compat_query_qp,
            _compat_modify_qp, _compat_destroy_qp, post_send, post_recv, _compat_create_ah,
            _compat_destroy_ah, _compat_attach_mcast, _compat_detach_mcast, _compat_async_event,
        }
        ibv_cq {
            context, channel, cq_context, handle, cqe, mutex, cond, comp_events_completed,
            async_events_completed,
        }
        ibv_device {}
        ibv_device_attr {
            fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id,
            vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd,
            max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom,
            max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw,
            max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach,
            max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr,
            max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt,
        }
        ibv_gid { raw, global, global.subnet_prefix, global.interface_id }
        ibv_mr { context, pd, addr, length, handle, lkey, rkey }
        ibv_mw {}
        ibv_mw_bind {}
        ibv_mw_bind_info { mr, addr, length, mw_access_flags }
        ibv_pd {}
        ibv_qp {
            context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state, qp_type, mutex,
            cond, events_completed,
        }
        ibv_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data }
        ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all }
        ibv_recv_wr { wr_id, next, sg_list, num_sge }
        ibv_sa_path_rec {}
        ibv_send_wr {
            wr_id, next, sg_list, num_sge, opcode, send_flags, __bindgen_anon_1.imm_data,
            __bindgen_anon_1.invalidate_rkey, wr, wr.rdma, wr.rdma.remote_addr, wr.rdma.rkey,
            wr.atomic, wr.atomic.remote_addr, wr.atomic.compare_add, wr.atomic.swap, wr.atomic.rkey,
            wr.ud, wr.ud.ah, wr.ud.remote_qpn, wr.ud.remote_qkey, qp_type, qp_type.xrc,
            qp_type.xrc.remote_srqn, __bindgen_anon_2.bind_mw, __bindgen_anon_2.bind_mw.mw,
            __bindgen_anon_2.bind_mw.rkey, __bindgen_anon_2.bind_mw.bind_info, __bindgen_anon_2.tso,
            __bindgen_anon_2.tso.hdr, __bindgen_anon_2.tso.hdr_sz, __bindgen_anon_2.tso.mss,
        }
        ibv_sge { addr, length, lkey }
        ibv_srq {}
        ibv_wc {
            wr_id, status, opcode, vendor_err, byte_len, __bindgen_anon_1.imm_data,
            __bindgen_anon_1.invalidated_rkey, qp_num, src_qp, wc_flags, pkey_index, slid, sl,
            dlid_path_bits,
        }
        in6_addr { __in6_u, __in6_u.__u6_addr8, __in6_u.__u6_addr16, __in6_u.__u6_addr32 }
        in_addr { s_addr }
        rdma_addr {
            __bindgen_anon_1.src_addr, __bindgen_anon_1.src_sin, __bindgen_anon_1.src_sin6,
            __bindgen_anon_1.src_storage, __bindgen_anon_2.dst_addr, __bindgen_anon_2.dst_sin,
            __bindgen_anon_2.dst_sin6, __bindgen_anon_2.dst_storage, addr, addr.ibaddr,
        }
        rdma_cm_event { id, listen_id, event, status, param, param.conn, param.ud }
        rdma_cm_id {
            verbs, channel, context, qp, route, ps, port_num, event, send_cq_channel, send_cq,
            recv_cq_channel, recv_cq, srq, pd, qp_type,
        }
        rdma_conn_param {
            private_data, private_data_len, responder_resources, initiator_depth, flow_control,
            retry_count, rnr_retry_count, srq, qp_num,
        }
        rdma_event_channel { fd }
        rdma_ib_addr { sgid, dgid, pkey }
        rdma_route { addr, path_rec, num_paths }
        rdma_ud_param {}
        sockaddr { sa_family, sa_data }
        sockaddr_in { sin_family, sin_port, sin_addr, sin_zero }
        sockaddr_in6 { sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id }
        sockaddr_storage { ss_family, __ss_padding, __ss_align }
    };
    let constants = constants! {
        IBV_ACCESS_HUGETLB, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_MW_BIND, IBV_ACCESS_ON_DEMAND,
        IBV_ACCESS_RELAXED_ORDERING, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_READ,
        IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_ZERO_BASED, IBV_ATOMIC_GLOB, IBV_ATOMIC_HCA,
        IBV_ATOMIC_NONE, IBV_MW_TYPE_1, IBV_MW_TYPE_2, IBV_QPS_ERR, IBV_QPS_INIT, IBV_QPS_RESET,
        IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_UNKNOWN, IBV_QPT_DRIVER,
        IBV_QPT_RAW_PACKET, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_RECV, IBV_QPT_XRC_SEND,
        IBV_SEND_FENCE, IBV_SEND_INLINE, IBV_SEND_IP_CSUM, IBV_SEND_SIGNALED, IBV_SEND_SOLICITED,
        IBV_WC_ATOMIC_WRITE, IBV_WC_BAD_RESP_ERR, IBV_WC_BIND_MW, IBV_WC_COMP_SWAP, IBV_WC_DRIVER1,
        IBV_WC_DRIVER2, IBV_WC_DRIVER3, IBV_WC_FATAL_ERR, IBV_WC_FETCH_ADD, IBV_WC_GENERAL_ERR,
        IBV_WC_INV_EECN_ERR, IBV_WC_INV_EEC_STATE_ERR, IBV_WC_LOCAL_INV, IBV_WC_LOC_ACCESS_ERR,
        IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR,
        IBV_WC_LOC_RDD_VIOL_ERR, IBV_WC_MW_BIND_ERR, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE,
        IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_REM_ABORT_ERR, IBV_WC_REM_ACCESS_ERR,
        IBV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR,
        IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_SEND,
        IBV_WC_SUCCESS, IBV_WC_TM_ADD, IBV_WC_TM_DEL, IBV_WC_TM_ERR, IBV_WC_TM_NO_TAG,
        IBV_WC_TM_RECV, IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_SYNC, IBV_WC_TSO, IBV_WC_WR_FLUSH_ERR,
        IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_WRITE, IBV_WR_BIND_MW,
        IBV_WR_DRIVER1, IBV_WR_LOCAL_INV, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
        IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_INV,
        IBV_WR_TSO, IB_UVERBS_ACCESS_HUGETLB, IB_UVERBS_ACCESS_LOCAL_WRITE,
        IB_UVERBS_ACCESS_MW_BIND, IB_UVERBS_ACCESS_ON_DEMAND, IB_UVERBS_ACCESS_OPTIONAL_RANGE,
        IB_UVERBS_ACCESS_RELAXED_ORDERING, IB_UVERBS_ACCESS_REMOTE_ATOMIC,
        IB_UVERBS_ACCESS_REMOTE_READ, IB_UVERBS_ACCESS_REMOTE_WRITE, IB_UVERBS_ACCESS_ZERO_BASED,
        RDMA_CM_EVENT_ADDR_CHANGE, RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ADDR_RESOLVED,
        RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE,
        RDMA_CM_EVENT_DEVICE_REMOVAL, RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_ESTABLISHED,
        RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_REJECTED,
        RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED, RDMA_CM_EVENT_TIMEWAIT_EXIT,
        RDMA_CM_EVENT_UNREACHABLE, RDMA_PS_IB, RDMA_PS_IPOIB, RDMA_PS_TCP, RDMA_PS_UDP,
    };
    (layouts, constants)
}

/// A struct or union of `ffi.rs`.
#[derive(Debug)]
struct Item {
    union: bool,
    /// Declared but not defined in C (bindgen's `_unused: [u8; 0]`): no
    /// layout.
    incomplete: bool,
    /// Field name and the start of its type.
    fields: Vec<(String, String)>,
}

/// A prototype of a table: name, argument types, return type.
#[derive(Debug)]
struct Prototype {
    name: String,
    args: Vec<String>,
    ret: Option<String>,
}

/// What `ffi.rs` declares, read from its (rustfmt'ed bindgen) text.
#[derive(Debug, Default)]
struct Declared {
    items: BTreeMap<String, Item>,
    /// Constant name to its type.
    constants: BTreeMap<String, String>,
    /// Type alias name to its target.
    aliases: BTreeMap<String, String>,
    functions: Vec<Prototype>,
}

fn parse(src: &str) -> Declared {
    let mut d = Declared::default();
    let mut current: Option<(String, Item)> = None;
    let mut in_table = false;
    let mut stmt = String::new();
    for line in src.lines() {
        if let Some((name, item)) = current.as_mut() {
            if line == "}" {
                let (name, item) = current.take().expect("in an item");
                d.items.insert(name, item);
            } else if line == "    _unused: [u8; 0]," {
                item.incomplete = true;
            } else if let Some(rest) = line.strip_prefix("    pub ") {
                let (field, ty) = rest.split_once(':').expect("pub field: type");
                assert!(
                    !field.starts_with("_bitfield"),
                    "{name}: bitfields are not checked by this test"
                );
                let ty = ty.trim().trim_end_matches(',').to_string();
                item.fields.push((field.to_string(), ty));
            }
            continue;
        }
        if in_table {
            let l = line.trim();
            if l == "}" {
                in_table = false;
            } else if !l.starts_with("///") {
                stmt.push_str(l);
                if l.ends_with(';') {
                    d.functions.push(prototype(&stmt));
                    stmt.clear();
                }
            }
            continue;
        }
        for (prefix, union) in [("pub struct ", false), ("pub union ", true)] {
            if let Some(rest) = line.strip_prefix(prefix) {
                if let Some(name) = rest.strip_suffix(" {") {
                    current = Some((
                        name.to_string(),
                        Item {
                            union,
                            incomplete: false,
                            fields: Vec::new(),
                        },
                    ));
                }
            }
        }
        if let Some(rest) = line.strip_prefix("pub const ") {
            let (name, rest) = rest.split_once(':').expect("pub const NAME: T = V;");
            let ty = rest.split_once('=').expect("= value").0.trim();
            d.constants.insert(name.to_string(), ty.to_string());
        } else if let Some(rest) = line.strip_prefix("pub type ") {
            let (name, target) = rest.split_once(" = ").expect("pub type A = B;");
            d.aliases
                .insert(name.to_string(), target.trim_end_matches(';').to_string());
        } else if line.starts_with("    pub struct ") && line.ends_with(" {") {
            in_table = true;
        }
    }
    assert!(current.is_none() && !in_table, "ffi.rs ends inside an item");
    d
}

/// `fn name(a: T, b: U) -> R;` (whitespace as rustfmt leaves it).
fn prototype(stmt: &str) -> Prototype {
    let s = stmt.strip_prefix("fn ").expect("fn name(...)");
    let (name, rest) = s.split_once('(').expect("(");
    let (args, ret) = rest.rsplit_once(')').expect(")");
    let args = args
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| a.split_once(':').expect("arg: type").1.trim().to_string())
        .collect();
    let ret = ret.trim().trim_end_matches(';').trim();
    let ret = ret.strip_prefix("->").map(|r| r.trim().to_string());
    Prototype {
        name: name.to_string(),
        args,
        ret,
    }
}

/// A field to check: its Rust path and its C path (anonymous members have
/// no name in C).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Field {
    rust: String,
    c: String,
}

/// Every named struct or union with its fields, flattened through the
/// anonymous types bindgen names `outer__bindgen_ty_N`.
fn fields(d: &Declared) -> BTreeMap<String, Vec<Field>> {
    fn walk(d: &Declared, item: &Item, rust: &str, c: &str, out: &mut Vec<Field>) {
        for (name, ty) in &item.fields {
            if name == "_bindgen_opaque_blob" {
                continue; // an opaque type: its size only
            }
            let anon = name.starts_with("__bindgen_anon_");
            let rust = format!("{rust}{name}");
            let c = if anon {
                c.to_string()
            } else {
                format!("{c}{name}")
            };
            if !anon {
                out.push(Field {
                    rust: rust.clone(),
                    c: c.clone(),
                });
            }
            if ty.contains("__bindgen_ty_") {
                let inner = d.items.get(ty.as_str()).expect("anonymous type declared");
                let c = if anon { c } else { format!("{c}.") };
                walk(d, inner, &format!("{rust}."), &c, out);
            }
        }
    }
    let mut all = BTreeMap::new();
    for (name, item) in &d.items {
        if name.contains("__bindgen_ty_") || name.starts_with("__Bindgen") || item.incomplete {
            continue;
        }
        let mut out = Vec::new();
        walk(d, item, "", "", &mut out);
        all.insert(name.clone(), out);
    }
    all
}

/// The C spelling of a Rust type of a prototype.
fn c_type(d: &Declared, ty: &str) -> String {
    if let Some(rest) = ty.strip_prefix("*mut ") {
        return format!("{} *", c_type(d, rest));
    }
    if let Some(rest) = ty.strip_prefix("*const ") {
        return format!("{} const *", c_type(d, rest));
    }
    let raw = ty.strip_prefix("::std::os::raw::").unwrap_or(ty);
    let prim = match raw {
        "c_void" => "void",
        "c_char" => "char",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_long" => "long",
        "c_ulong" => "unsigned long",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "usize" => "size_t",
        _ => "",
    };
    if !prim.is_empty() {
        return prim.to_string();
    }
    if let Some(item) = d.items.get(ty) {
        return format!("{} {ty}", if item.union { "union" } else { "struct" });
    }
    if d.constants.values().any(|t| t == ty) {
        return format!("enum {ty}");
    }
    assert!(d.aliases.contains_key(ty), "no C spelling for {ty}");
    ty.to_string() // a typedef of the same name
}

/// The C program printing what the headers say, one line per check, in
/// the form [`expected`] writes.
fn c_program(d: &Declared) -> String {
    let mut p = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n\
         #include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n\
         int main(void)\n{\n",
    );
    for (name, fields) in fields(d) {
        let kw = if d.items[&name].union {
            "union"
        } else {
            "struct"
        };
        writeln!(
            p,
            "printf(\"size {name} %zu %zu\\n\", sizeof({kw} {name}), _Alignof({kw} {name}));"
        )
        .unwrap();
        for f in fields {
            writeln!(
                p,
                "printf(\"field {name} {} %zu %zu\\n\", offsetof({kw} {name}, {}), sizeof((({kw} {name} *)0)->{}));",
                f.rust, f.c, f.c
            )
            .unwrap();
        }
    }
    for c in d.constants.keys() {
        writeln!(
            p,
            "if ({c} < 0) printf(\"const {c} %lld\\n\", (long long){c}); \
             else printf(\"const {c} %llu\\n\", (unsigned long long){c});"
        )
        .unwrap();
    }
    for f in &d.functions {
        let args: Vec<String> = f.args.iter().map(|a| c_type(d, a)).collect();
        let args = if args.is_empty() {
            "void".to_string()
        } else {
            args.join(", ")
        };
        let ret = f.ret.as_deref().map_or("void".into(), |r| c_type(d, r));
        writeln!(
            p,
            "printf(\"fn {0} %d\\n\", __builtin_types_compatible_p(__typeof__(&{0}), {ret} (*)({args})));",
            f.name
        )
        .unwrap();
    }
    p.push_str("return 0;\n}\n");
    p
}

/// The lines the C program must print, from Rust's values.
fn expected(d: &Declared) -> BTreeSet<String> {
    let (layouts, constants) = rust_values();
    let mut lines = BTreeSet::new();
    for (name, fields) in fields(d) {
        let (size, align) = layouts[&(name.clone(), String::new())];
        lines.insert(format!("size {name} {size} {align}"));
        for f in fields {
            let (offset, size) = layouts[&(name.clone(), f.rust.clone())];
            lines.insert(format!("field {name} {} {offset} {size}", f.rust));
        }
    }
    for (name, value) in constants {
        lines.insert(format!("const {name} {value}"));
    }
    for f in &d.functions {
        lines.insert(format!("fn {} 1", f.name));
    }
    lines
}

/// The list of [`rust_values`] names exactly what `ffi.rs` declares.
#[test]
fn the_list_names_every_type_field_and_constant() {
    let d = parse(FFI);
    let (layouts, constants) = rust_values();
    let mut want = String::new();
    let mut listed: BTreeSet<(String, String)> = BTreeSet::new();
    for (name, fields) in fields(&d) {
        listed.insert((name.clone(), String::new()));
        let paths: Vec<String> = fields.into_iter().map(|f| f.rust).collect();
        for p in &paths {
            listed.insert((name.clone(), p.clone()));
        }
        writeln!(want, "        {name} {{ {} }}", paths.join(", ")).unwrap();
    }
    let have: BTreeSet<(String, String)> = layouts.keys().cloned().collect();
    let consts_want: BTreeSet<&String> = d.constants.keys().collect();
    let consts_have: BTreeSet<&String> = constants.keys().collect();
    let show = |a: &BTreeSet<(String, String)>, b: &BTreeSet<(String, String)>| {
        a.difference(b)
            .map(|(t, f)| {
                if f.is_empty() {
                    t.clone()
                } else {
                    format!("{t}.{f}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        listed == have && consts_want == consts_have,
        "rust_values() does not list what ffi.rs declares (missing: {} {:?}; not in ffi.rs: {} {:?}); \
         it should read:\n    let layouts = layouts! {{\n{want}    }};\n    \
         let constants = constants! {{ {} }};",
        show(&listed, &have),
        consts_want.difference(&consts_have).collect::<Vec<_>>(),
        show(&have, &listed),
        consts_have.difference(&consts_want).collect::<Vec<_>>(),
        d.constants.keys().cloned().collect::<Vec<_>>().join(", "),
    );
    assert!(d.functions.len() >= 30, "the two tables hold numio's calls");
}

/// Skips (saying why) or, with `CI=true`, fails.
fn skip(why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}; CI=true: the rdma-core layout test must run there");
    }
    eprintln!("skipped: {why}");
}

/// The committed bindings against the installed headers.
#[test]
fn bindings_match_the_installed_headers() {
    for h in HEADERS {
        if !Path::new("/usr/include").join(h).exists() {
            return skip(&format!(
                "/usr/include/{h} is not installed (apt install libibverbs-dev librdmacm-dev)"
            ));
        }
    }
    let d = parse(FFI);
    let dir = std::env::temp_dir().join(format!("sysapi-rdma-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let bin = dir.join("layout");
    std::fs::write(&src, c_program(&d)).unwrap();
    let cc = match Command::new("cc")
        .arg("-std=gnu11")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return skip(&format!(
                "no C compiler `cc` ({e}; apt install build-essential)"
            ));
        }
    };
    assert!(
        cc.status.success(),
        "cc {}: {}",
        src.display(),
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&bin).output().unwrap();
    assert!(run.status.success(), "{}", bin.display());
    let _ = std::fs::remove_dir_all(&dir);
    let got: BTreeSet<String> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let want = expected(&d);
    let only_rust: Vec<_> = want.difference(&got).collect();
    let only_c: Vec<_> = got.difference(&want).collect();
    assert!(
        only_rust.is_empty() && only_c.is_empty(),
        "ffi.rs differs from the installed headers (scripts/gen-rdma-bindings regenerates it):\n\
         Rust says: {only_rust:#?}\nC says: {only_c:#?}"
    );
    eprintln!(
        "{} layouts, fields, constants and prototypes match the headers",
        want.len()
    );
}
