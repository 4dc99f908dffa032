//! `poll = true` (`numio serve --poll`): reactors that never sleep still
//! serve every kind of I/O and stop cleanly (each enter runs the ring's
//! deferred task work, without which no socket completion would arrive).

mod common;

use common::*;

#[test]
fn busy_polling_reactors_serve_io_and_stop() {
    let mut c = config(None);
    c.poll = true;
    let (s, addr) = start(&c);
    let (_a, mut q) = controller(addr, &opts());
    for (slba, blocks) in [(0u64, 1u32), (64, 64), (1024, 512)] {
        let data = pattern(slba as u32 + 7, blocks as usize * 512);
        q.write(1, slba, &data).unwrap();
        assert_eq!(
            q.read(1, slba, blocks).unwrap(),
            data,
            "{blocks} blocks at {slba}"
        );
    }
    drop(q);
    s.stop().expect("a polling target stops");
}
