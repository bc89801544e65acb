#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sieved::fuzz_support::filter_dumps(data));
