//! Test certificates, made fresh for each test run so none ever expires: a
//! CA, server leaves for `localhost` and `127.0.0.1` (good, expired, and for
//! the wrong name), a second CA nobody trusts, and a client leaf for mTLS.
//! Written as PEM files into a directory, as a user would have them.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, date_time_ymd,
};

/// The files of a test PKI.
#[allow(dead_code)]
pub(crate) struct Pki {
    pub dir: PathBuf,
    /// The CA that signs everything below except `untrusted_*`.
    pub ca: PathBuf,
    /// Leaf for `localhost` and `127.0.0.1`, valid now.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Same names, expired a year ago.
    pub expired_cert: PathBuf,
    pub expired_key: PathBuf,
    /// Valid now, for `other.example` only.
    pub wrong_name_cert: PathBuf,
    pub wrong_name_key: PathBuf,
    /// Valid for `localhost`, signed by a CA nobody was told about.
    pub untrusted_cert: PathBuf,
    pub untrusted_key: PathBuf,
    /// The untrusted CA's own certificate: point `SSL_CERT_FILE` at it to
    /// give a run a system store that trusts none of the above, on any
    /// machine.
    pub other_ca: PathBuf,
    /// A client certificate for mTLS, signed by `ca`.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn ca_params(name: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p
}

fn leaf(names: &[&str], cn: &str, client: bool, expired: bool) -> CertificateParams {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.extended_key_usages = vec![if client {
        ExtendedKeyUsagePurpose::ClientAuth
    } else {
        ExtendedKeyUsagePurpose::ServerAuth
    }];
    let (y, m, d) = today();
    let d = d.min(28);
    if expired {
        p.not_before = date_time_ymd(y - 2, m, d);
        p.not_after = date_time_ymd(y - 1, m, d);
    } else {
        p.not_before = date_time_ymd(y - 1, m, d);
        p.not_after = date_time_ymd(y + 1, m, d);
    }
    p
}

/// Today's UTC date (the civil-from-days conversion).
fn today() -> (i32, u8, u8) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as i32, m as u8, d as u8)
}

fn write(dir: &Path, name: &str, pem: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, pem).unwrap();
    p
}

impl Pki {
    /// Makes every certificate and key under `dir`.
    pub(crate) fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let ca_p = ca_params("llmload test CA");
        let ca_cert = ca_p.self_signed(&ca_key).unwrap();
        let ca = Issuer::new(ca_p, ca_key);
        let other_key = KeyPair::generate().unwrap();
        let other_params = ca_params("untrusted test CA");
        let other_cert = other_params.self_signed(&other_key).unwrap();
        let other = Issuer::new(other_params, other_key);
        let sign = |name: &str, params: CertificateParams, issuer: &Issuer<'_, KeyPair>| {
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, issuer).unwrap();
            (
                write(dir, &format!("{name}.pem"), &cert.pem()),
                write(dir, &format!("{name}.key"), &key.serialize_pem()),
            )
        };
        let here = ["localhost", "127.0.0.1"];
        let (cert, key) = sign("server", leaf(&here, "localhost", false, false), &ca);
        let (expired_cert, expired_key) =
            sign("expired", leaf(&here, "localhost", false, true), &ca);
        let (wrong_name_cert, wrong_name_key) = sign(
            "wrong-name",
            leaf(&["other.example"], "other.example", false, false),
            &ca,
        );
        let (untrusted_cert, untrusted_key) =
            sign("untrusted", leaf(&here, "localhost", false, false), &other);
        let (client_cert, client_key) =
            sign("client", leaf(&[], "llmload test client", true, false), &ca);
        Pki {
            dir: dir.to_path_buf(),
            ca: write(dir, "ca.pem", &ca_cert.pem()),
            cert,
            key,
            expired_cert,
            expired_key,
            wrong_name_cert,
            wrong_name_key,
            untrusted_cert,
            untrusted_key,
            other_ca: write(dir, "other-ca.pem", &other_cert.pem()),
            client_cert,
            client_key,
        }
    }
}

#[test]
fn the_test_pki_is_made_and_dated_today() {
    let dir = crate::util::temp_dir("pki");
    let pki = Pki::new(&dir);
    for f in [
        &pki.ca,
        &pki.cert,
        &pki.key,
        &pki.client_cert,
        &pki.expired_cert,
    ] {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.starts_with("-----BEGIN"), "{}", f.display());
    }
    let (y, m, d) = today();
    assert!((2024..2200).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d));
    let _ = std::fs::remove_dir_all(dir);
}
