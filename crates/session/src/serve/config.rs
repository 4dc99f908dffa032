//! The configuration `numio serve` serves: a `--config` TOML file (read
//! through `nvmf::tgt::config_file`, within its timeout) or none, with the
//! flags over it: listeners and transports, ANA states, the discovery
//! port, reactor CPUs, limits, and the `--ns` namespaces as one subsystem
//! with its allowed hosts (or, without `--ns`, the hosts added to every
//! subsystem of the file). Start-up and each SIGHUP reload build it here.

use std::net::SocketAddr;

use nvmf::config::{HostConfig, Limits, NamespaceConfig, SubsystemConfig, TargetConfig};
use nvmf::tgt::config_file;
use topology::CpuList;

use super::error::ServeError;
use super::options::{LimitFlags, ServeOptions};

/// The configuration `opts` asks for, and whether any host may connect
/// only because no allow list was given (start-up warns then). With
/// `bound`, the listeners are those (a reload: the ones bound at start,
/// which messages about ports then name).
pub fn build(
    opts: &ServeOptions,
    bound: Option<&[SocketAddr]>,
) -> Result<(TargetConfig, bool), ServeError> {
    let mut cfg = match &opts.config {
        Some(p) => {
            let text =
                config_file::read(p, config_file::READ_TIMEOUT, nvmf::reactor::stop_requested)?;
            TargetConfig::from_toml(&text, &p.display().to_string())?
        }
        None => TargetConfig::default(),
    };
    if !opts.listen.is_empty() {
        cfg.listen = opts.listen.clone();
    }
    if opts.transport.rdma {
        cfg.rdma_listen.extend(cfg.listen.iter().copied());
        if !opts.transport.tcp {
            cfg.listen.clear();
        }
    }
    if let Some(bound) = bound {
        cfg.listen = bound.to_vec();
    }
    if !opts.ana.is_empty() {
        cfg.ana = opts.ana.clone();
    }
    if let Some(p) = opts.discovery_port {
        cfg.discovery_port = p;
    }
    cfg.log_connections |= opts.log_connections;
    cfg.tls |= opts.tls;
    cfg.poll |= opts.poll;
    if let Some(c) = &opts.cpus {
        cfg.cpus = parse_cpus("--cpus", c)?;
    }
    apply_limits(&mut cfg.limits, &opts.limits);
    let open_by_default = add_hosts_and_namespaces(&mut cfg, opts)?;
    if cfg.subsystems.is_empty() {
        return Err(ServeError::NothingToServe);
    }
    cfg.validate()?;
    Ok((cfg, open_by_default))
}

/// Each limit flag given over the configuration's value.
fn apply_limits(l: &mut Limits, f: &LimitFlags) {
    l.max_connections = f.max_connections.unwrap_or(l.max_connections);
    l.max_io_queues = f.max_io_queues.unwrap_or(l.max_io_queues);
    l.max_queue_depth = f.queue_depth.unwrap_or(l.max_queue_depth);
    l.io_in_capsule_bytes = f.in_capsule.unwrap_or(l.io_in_capsule_bytes);
    l.max_h2c_data_bytes = f.max_h2c_data.unwrap_or(l.max_h2c_data_bytes);
    l.max_transfer_bytes = f.max_transfer.unwrap_or(l.max_transfer_bytes);
    l.max_buffer_bytes = f.max_buffer_bytes.unwrap_or(l.max_buffer_bytes);
}

/// The `--ns` subsystem with its hosts, or the hosts added to every
/// subsystem of `--config`; true when any host is admitted for want of
/// an allow list.
fn add_hosts_and_namespaces(
    cfg: &mut TargetConfig,
    opts: &ServeOptions,
) -> Result<bool, ServeError> {
    let mut open_by_default = false;
    // `NQN` or `NQN,dhchap-secret=FILE,...`: plain NQNs and hosts that
    // must authenticate.
    let (mut plain_hosts, mut auth_hosts) = (Vec::new(), Vec::new());
    for h in &opts.allow_host {
        match HostConfig::parse_flag(h)? {
            Some(c) => auth_hosts.push(c),
            None => plain_hosts.push(h.clone()),
        }
    }
    if !opts.namespaces.is_empty() {
        open_by_default = opts.allow_host.is_empty() && !opts.allow_any_host;
        cfg.subsystems.push(SubsystemConfig {
            nqn: opts.nqn.clone(),
            serial: opts.serial.clone(),
            model: opts.model.clone(),
            allowed_hosts: plain_hosts,
            allow_any_host: opts.allow_any_host || open_by_default,
            hosts: auth_hosts,
            namespaces: opts
                .namespaces
                .iter()
                .map(|b| NamespaceConfig::from_spec(b))
                .collect::<Result<_, _>>()?,
        });
    } else if !opts.allow_host.is_empty() || opts.allow_any_host {
        if opts.config.is_none() {
            return Err(ServeError::HostsWithoutNamespace);
        }
        for s in &mut cfg.subsystems {
            s.allowed_hosts.extend(plain_hosts.iter().cloned());
            s.hosts.extend(auth_hosts.iter().cloned());
            s.allow_any_host |= opts.allow_any_host;
        }
    }
    Ok(open_by_default)
}

/// Parses a CPU list flag (`flag`: `--cpus`, `--port-cpus`; "0-3,8", the
/// kernel's CPU list format) into CPU numbers.
pub fn parse_cpus(flag: &'static str, s: &str) -> Result<Vec<usize>, ServeError> {
    let list = CpuList::parse(s).map_err(|reason| ServeError::CpuList {
        flag,
        value: s.to_string(),
        reason,
    })?;
    if list.is_empty() {
        return Err(ServeError::NoCpu {
            flag,
            value: s.to_string(),
        });
    }
    Ok(list.ids().iter().map(|&c| c as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvmf::config::DEFAULT_NQN;

    /// `numio serve` with `--ns` namespaces and nothing else.
    fn ns(specs: &[&str]) -> ServeOptions {
        ServeOptions {
            namespaces: specs.iter().map(|s| s.to_string()).collect(),
            ..ServeOptions::default()
        }
    }

    fn build_config(opts: &ServeOptions) -> Result<(TargetConfig, bool), ServeError> {
        build(opts, None)
    }

    /// Issue 39: `mem:1.5G` was refused where `--size 1.5G` works.
    #[test]
    fn namespaces_take_fio_sizes() {
        let (cfg, _) = build_config(&ns(&["mem:1.5G"])).unwrap();
        assert_eq!(cfg.subsystems[0].namespaces[0].backing, "mem:1.5G");
    }

    #[test]
    fn flags_build_a_config() {
        let mut o = ns(&["mem:16M"]);
        o.limits.queue_depth = Some(64);
        let (cfg, open) = build_config(&o).unwrap();
        assert!(open, "no --allow-host: any host, with a warning");
        assert_eq!(cfg.limits.max_queue_depth, 64);
        assert_eq!(cfg.subsystems[0].nqn, DEFAULT_NQN);
        let mut o = ns(&["mem:16M"]);
        o.allow_host = vec!["nqn.h".into()];
        let (cfg, open) = build_config(&o).unwrap();
        assert!(!open && !cfg.subsystems[0].allow_any_host);
        assert_eq!(cfg.subsystems[0].allowed_hosts, vec!["nqn.h".to_string()]);
        let (cfg, _) = build_config(&ns(&["mem:16M,block=4096,buffered"])).unwrap();
        let ns0 = &cfg.subsystems[0].namespaces[0];
        assert_eq!(
            (ns0.backing.as_str(), ns0.block_size, ns0.buffered),
            ("mem:16M", Some(4096), true)
        );
        assert!(build_config(&ns(&["mem:16M,block=12"])).is_err());
        let e = build_config(&ns(&[])).unwrap_err().to_string();
        assert!(e.contains("--ns mem:1G"), "{e}");
        let mut o = ns(&["mem:16M"]);
        o.limits.max_transfer = Some(5000);
        let e = build_config(&o).unwrap_err().to_string();
        assert!(e.contains("max_transfer_bytes"), "{e}");
    }

    #[test]
    fn the_packaged_sample_config_serves() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../packaging/config/example.toml"
        );
        let o = ServeOptions {
            config: Some(path.into()),
            ..ServeOptions::default()
        };
        let (cfg, open) = build_config(&o).unwrap();
        assert!(!open);
        assert_eq!(cfg.subsystems.len(), 1);
        assert_eq!(cfg.subsystems[0].namespaces[0].backing, "mem:1G");
        assert_eq!(cfg.ana_states().unwrap().len(), 1);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("--cpus", "0-2,5").unwrap(), vec![0, 1, 2, 5]);
        let err = |s: &str| parse_cpus("--cpus", s).unwrap_err().to_string();
        assert!(err("3-1").contains("runs backwards"), "{}", err("3-1"));
        assert_eq!(
            err("x"),
            "--cpus \"x\": `x` in CPU list `x` is not a CPU number"
        );
        assert_eq!(err(""), "--cpus \"\" names no CPU");
    }
}
