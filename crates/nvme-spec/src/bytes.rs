//! Little-endian field access at byte offsets: every layout in this crate is
//! read and written through these helpers so no code depends on host order.

/// Reads a little-endian `u16` at `off`.
pub fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// Reads a little-endian `u32` at `off`.
pub fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Reads a little-endian `u64` at `off`.
pub fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(v)
}

/// Writes a little-endian `u16` at `off`.
pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian `u32` at `off`.
pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian `u64` at `off`.
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes `s` into `b[off..off + width]`, padded with ASCII spaces, as NVMe
/// does for serial numbers, model numbers and service ids.
pub fn put_ascii_padded(b: &mut [u8], off: usize, width: usize, s: &str) {
    let field = &mut b[off..off + width];
    field.fill(b' ');
    let n = s.len().min(width);
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Writes `s` into `b[off..off + width]`, zero padded (NQNs, addresses).
pub fn put_str_zero_padded(b: &mut [u8], off: usize, width: usize, s: &str) {
    let field = &mut b[off..off + width];
    field.fill(0);
    let n = s.len().min(width);
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Reads a NUL- or space-terminated ASCII string from `b[off..off + width]`.
pub fn get_str(b: &[u8], off: usize, width: usize) -> String {
    let field = &b[off..off + width];
    let end = field.iter().position(|&c| c == 0).unwrap_or(width);
    String::from_utf8_lossy(&field[..end])
        .trim_end()
        .to_string()
}
