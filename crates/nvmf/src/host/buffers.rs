//! Where a host queue finds command data: the caller's memory, by command
//! id, for the queue and its send buffer alike.

/// The caller's data of the commands in flight, by command id.
pub trait DataBuffers {
    /// The bytes command `cid` writes: at least its transfer's length.
    fn outgoing(&self, cid: u16) -> &[u8];
    /// Where command `cid`'s read data lands: at least its transfer's
    /// length.
    fn incoming(&mut self, cid: u16) -> &mut [u8];
}
