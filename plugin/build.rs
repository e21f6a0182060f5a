// The QEMU plugin API symbols are resolved by QEMU when it loads the library.
fn main() {
    println!("cargo:rustc-link-arg-cdylib=-Wl,-z,undefs");
}
