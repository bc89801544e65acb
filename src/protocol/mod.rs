//! The wire protocol, without sockets: a request parser over a byte buffer and a reply encoder
//! into a byte buffer. The connection loop feeds one and drains the other.

mod parser;
mod peek;
mod reply;
mod request_list;

pub use parser::{encode_request, parse_i64, Limits, ProtocolError, Request, RequestParser};
pub use peek::peek_request;
pub use reply::{Protocol, Reply};
pub use request_list::RequestList;
