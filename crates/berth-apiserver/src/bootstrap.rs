//! What `berth server` makes on first start and reuses afterwards, all in
//! its data dir: a CA (`ca.crt`, `ca.key`), a serving certificate for the
//! listen address and localhost (`server.crt`, `server.key`), the admin
//! token (`admin-token`), the join token node agents present
//! (`join-token`), and `kubeconfig.yaml` for kubectl and client libraries.
//! Secrets are written with mode 0600.

use std::fs;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// Failures making or reading the data dir's credentials.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("making certificates: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("{}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BootstrapError + '_ {
    move |source| BootstrapError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The credentials of a server.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub ca_cert: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub admin_token: String,
    pub join_token: String,
    pub kubeconfig: PathBuf,
}

/// The data dir's file names.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const SERVER_CERT: &str = "server.crt";
pub const SERVER_KEY: &str = "server.key";
pub const ADMIN_TOKEN: &str = "admin-token";
pub const JOIN_TOKEN: &str = "join-token";

/// Writes a file only its owner may read, durably.
pub(crate) fn write_secret(path: &Path, contents: &[u8]) -> Result<(), BootstrapError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io(path))?;
    file.write_all(contents).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

fn random_token() -> Result<String, BootstrapError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| BootstrapError::Invalid {
        path: PathBuf::from("/dev/urandom"),
        problem: e.to_string(),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn read_or_make_token(path: &Path) -> Result<String, BootstrapError> {
    match fs::read_to_string(path) {
        Ok(token) if !token.trim().is_empty() => Ok(token.trim().to_string()),
        Ok(_) => Err(BootstrapError::Invalid {
            path: path.to_path_buf(),
            problem: "empty token file".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = random_token()?;
            write_secret(path, format!("{token}\n").as_bytes())?;
            Ok(token)
        }
        Err(e) => Err(BootstrapError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

fn ca_params() -> Result<CertificateParams, BootstrapError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "berth-ca");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

/// Makes (first start) or reads (later starts) the credentials in
/// `data_dir`, and writes the kubeconfig for `server_url`.
pub fn ensure(
    data_dir: &Path,
    listen: SocketAddr,
    server_url: &str,
) -> Result<Credentials, BootstrapError> {
    fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let ca_cert = data_dir.join(CA_CERT);
    let ca_key = data_dir.join(CA_KEY);
    let server_cert = data_dir.join(SERVER_CERT);
    let server_key = data_dir.join(SERVER_KEY);

    if !ca_cert.exists() || !ca_key.exists() {
        let key = KeyPair::generate()?;
        let cert = ca_params()?.self_signed(&key)?;
        write_secret(&ca_key, key.serialize_pem().as_bytes())?;
        fs::write(&ca_cert, cert.pem()).map_err(io(&ca_cert))?;
        // A new CA invalidates any serving certificate signed by an old one.
        let _ = fs::remove_file(&server_cert);
    }
    if !server_cert.exists() || !server_key.exists() {
        let ca_key_pem = fs::read_to_string(&ca_key).map_err(io(&ca_key))?;
        let ca_keypair = KeyPair::from_pem(&ca_key_pem).map_err(|e| BootstrapError::Invalid {
            path: ca_key.clone(),
            problem: format!("not a usable private key: {e}"),
        })?;
        let issuer = Issuer::new(ca_params()?, ca_keypair);
        let mut names = vec!["localhost".to_string(), "berth".to_string()];
        if let Ok(host) = fs::read_to_string("/etc/hostname") {
            let host = host.trim();
            if !host.is_empty() {
                names.push(host.to_string());
            }
        }
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "berth-apiserver");
        let mut ips: Vec<IpAddr> = vec![
            "127.0.0.1"
                .parse()
                .map_err(|_| rcgen::Error::CouldNotParseCertificate)?,
            "::1"
                .parse()
                .map_err(|_| rcgen::Error::CouldNotParseCertificate)?,
        ];
        if !listen.ip().is_unspecified() && !ips.contains(&listen.ip()) {
            ips.push(listen.ip());
        }
        params
            .subject_alt_names
            .extend(ips.into_iter().map(SanType::IpAddress));
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        write_secret(&server_key, key.serialize_pem().as_bytes())?;
        fs::write(&server_cert, cert.pem()).map_err(io(&server_cert))?;
    }
    let admin_token = read_or_make_token(&data_dir.join(ADMIN_TOKEN))?;
    let join_token = read_or_make_token(&data_dir.join(JOIN_TOKEN))?;
    let kubeconfig = data_dir.join("kubeconfig.yaml");
    let ca_pem = fs::read(&ca_cert).map_err(io(&ca_cert))?;
    write_secret(
        &kubeconfig,
        render_kubeconfig(server_url, &ca_pem, "admin", &admin_token).as_bytes(),
    )?;
    Ok(Credentials {
        ca_cert,
        server_cert,
        server_key,
        admin_token,
        join_token,
        kubeconfig,
    })
}

/// A kubeconfig with one cluster, one user (a bearer token) and one
/// context, as kubectl writes them.
pub fn render_kubeconfig(server_url: &str, ca_pem: &[u8], user: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: berth\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: berth\n  context:\n    cluster: berth\n    user: {user}\n    namespace: default\ncurrent-context: berth\npreferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("berth-bootstrap-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn first_start_makes_credentials_and_a_restart_keeps_them() {
        let dir = temp_dir("keep");
        let listen: SocketAddr = "127.0.0.1:6443".parse().expect("address");
        let first = ensure(&dir, listen, "https://127.0.0.1:6443").expect("first start");
        let ca = fs::read(&first.ca_cert).expect("ca");
        let cert = fs::read(&first.server_cert).expect("cert");
        let second = ensure(&dir, listen, "https://127.0.0.1:6443").expect("restart");
        assert_eq!(first.admin_token, second.admin_token);
        assert_eq!(first.join_token, second.join_token);
        assert_ne!(first.admin_token, first.join_token);
        assert_eq!(fs::read(&second.ca_cert).expect("ca"), ca);
        assert_eq!(fs::read(&second.server_cert).expect("cert"), cert);
        let kubeconfig = fs::read_to_string(&second.kubeconfig).expect("kubeconfig");
        assert!(kubeconfig.contains("server: https://127.0.0.1:6443"));
        assert!(kubeconfig.contains(&format!("token: {}", first.admin_token)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.join("ca.key"))
                .expect("key")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_empty_token_file_is_an_error_naming_it() {
        let dir = temp_dir("empty");
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("admin-token"), "").expect("write");
        let err = ensure(
            &dir,
            "127.0.0.1:6443".parse().expect("addr"),
            "https://127.0.0.1:6443",
        )
        .err();
        assert!(
            err.map(|e| e.to_string())
                .is_some_and(|m| m.contains("admin-token") && m.contains("empty token file"))
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
