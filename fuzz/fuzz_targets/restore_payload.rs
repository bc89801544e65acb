#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sieved::fuzz_support::restore_payload(data));
