"""The deployment files agree with the code: images, compose, Kubernetes, the env template.

No Docker engine or cluster is needed: files are parsed (YAML, Dockerfile instructions) and
checked against the CLI registry, the Settings fields, the web app's routes and each other.
Where ``kubectl`` is installed, its built-in kustomize renders every kustomization as well.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.app import build_parser
from bot.doctor import known_variables
from bot.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / ".env.example"
DOCKERFILE = DEPLOY / "Dockerfile"
RUNNER_DOCKERFILE = DEPLOY / "runner" / "Dockerfile"
ARCS_SERVICES = ("web", "worker")
ARCS_UID = 10001

NON_ARCS_VARIABLES = frozenset(
    {
        # compose.yaml's own knobs (deploy/.env.example documents each)
        "APP_IMAGE",
        "WEB_PORT",
        "WEB_WORKERS",
        "WORKER_PROCESSES",
        "WORKER_THREADS",
        "WORKER_TMP_SIZE",
        "GITHUB_APP_KEY_FILE",
        # gunicorn: the proxies whose X-Forwarded-* headers are trusted
        "FORWARDED_ALLOW_IPS",
        # the official PostgreSQL image, and deploy/postgres/init-arcs.sh (the role ARCS uses)
        "POSTGRES_USER",
        "POSTGRES_DB",
        "POSTGRES_PASSWORD",
        "PGDATA",
        "APP_DB_USER",
        "APP_DB_NAME",
        "APP_DB_PASSWORD",
        # Redis: the requirepass password, and redis-cli's (the health check's)
        "REDIS_PASSWORD",
        "REDISCLI_AUTH",
        # the official Qdrant image
        "QDRANT_INIT_FILE_PATH",
        "QDRANT__SERVICE__API_KEY",
    }
)
"""Variables that are not ARCS settings but appear in the deployment files on purpose."""


# ------------------------------------------------------------------------------------ helpers


def k8s_files() -> list[Path]:
    """Every YAML file under deploy/k8s."""
    return sorted(K8S.rglob("*.yaml"))


def k8s_docs(path: Path) -> list[dict[str, Any]]:
    """The documents of one (multi-document) YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def kustomizations() -> list[Path]:
    """Every kustomization.yaml."""
    return sorted(K8S.rglob("kustomization.yaml"))


def manifests() -> list[dict[str, Any]]:
    """The Kubernetes objects of deploy/k8s (not the kustomizations themselves)."""
    return [doc for path in k8s_files() if path.name != "kustomization.yaml" for doc in k8s_docs(path)]


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    """(workload name, pod spec) of every Deployment and StatefulSet in the base."""
    for path in sorted((K8S / "base").glob("*.yaml")):
        for doc in k8s_docs(path):
            if doc.get("kind") in ("Deployment", "StatefulSet"):
                yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def compose() -> dict[str, Any]:
    """compose.yaml, parsed (YAML merge keys resolved)."""
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: str, env: dict[str, str] | None = None) -> str:
    """compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``, against ``env`` (then defaults)."""
    env = env or {}

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op in (":-", "-"):
            return arg or ""
        return "x"  # ${VAR:?message}: a value the user must set

    return _INTERPOLATION.sub(one, value).replace("$$", "$")


def interpolated_names(text: str) -> set[str]:
    """The variables a compose file interpolates."""
    return {match.group(1) for match in _INTERPOLATION.finditer(text)}


def env_example() -> dict[str, str]:
    """The variables deploy/.env.example names, set (``KEY=value``) or commented (``# KEY=value``)."""
    names: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            names[match.group(1)] = match.group(2)
    return names


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    logical: list[str] = []
    current = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    out = []
    for line in logical:
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The instructions of the last build stage."""
    starts = [i for i, (word, _) in enumerate(instructions) if word == "FROM"]
    return instructions[starts[-1] :]


def app_routes(tmp_path: Path) -> set[str]:
    """The paths the web app serves (built with in-memory ports)."""
    from bot.web.app import create_app
    from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore

    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_EMBEDDER": "hash"})
    app = create_app(settings, store=MemoryDeliveryStore(), enqueuer=ListEnqueuer())
    return {path for route in app.routes if isinstance(path := getattr(route, "path", None), str)}


def parses_as_cli(argv: list[str]) -> None:
    """``arcs <argv>`` is accepted by the real CLI parser and reaches a handler."""
    args = build_parser().parse_args(argv)
    assert getattr(args, "handler", None) is not None, argv


def arcs_containers() -> Iterator[tuple[str, dict[str, Any]]]:
    """(workload, container) of every container that runs the ARCS image."""
    for name, spec in pod_specs():
        for container in spec["containers"]:
            if container["image"].split(":")[0] == "arcs":
                yield name, container


# ----------------------------------------------------------------------------- the image


def test_dockerfile_entry_point_is_the_console_script() -> None:
    final = final_stage(dockerfile_instructions(DOCKERFILE))
    entrypoints = [json.loads(arg) for word, arg in final if word == "ENTRYPOINT"]
    assert entrypoints == [["arcs"]]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["arcs"] == "bot.cli:main"


def test_dockerfile_default_command_is_a_cli_command() -> None:
    final = final_stage(dockerfile_instructions(DOCKERFILE))
    commands = [json.loads(arg) for word, arg in final if word == "CMD"]
    assert len(commands) == 1 and commands[0][0] == "serve"
    parses_as_cli(commands[0])
    assert "0.0.0.0" in commands[0], "a container must listen beyond loopback"


def test_dockerfile_runs_as_a_fixed_non_root_user() -> None:
    final = final_stage(dockerfile_instructions(DOCKERFILE))
    users = [arg for word, arg in final if word == "USER"]
    assert users == [f"{ARCS_UID}:{ARCS_UID}"]
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert f"--uid {ARCS_UID}" in text and f"chown {ARCS_UID}:{ARCS_UID} /data/arcs" in text


def test_dockerfile_stages_settings_and_packages() -> None:
    instructions = dockerfile_instructions(DOCKERFILE)
    froms = [arg for word, arg in instructions if word == "FROM"]
    assert len(froms) >= 2, "multi-stage: build and runtime"
    args = dict(arg.partition("=")[::2] for word, arg in instructions if word == "ARG" and "=" in arg)
    assert args["PYTHON_IMAGE"].startswith("python:3.11-slim")
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "download.pytorch.org/whl/cpu" in args["TORCH_INDEX_URL"]
    assert re.search(r'pip install "torch==\$\{TORCH_VERSION\}" --index-url', text)
    # Dependencies from the hashed lock, nothing resolved beyond it; then ARCS itself, no deps.
    assert "pip install --no-deps --require-hashes -r requirements/runtime.txt" in text
    assert re.search(r"pip install --no-deps \.( |$)", text, re.M), "a regular, non-editable install"
    assert text.index("requirements/runtime.txt") < text.index("pip install --no-deps .")
    assert "-e ." not in text
    assert re.search(r"apt-get install[^\n]*bubblewrap[^\n]*git", text)
    env = " ".join(arg for word, arg in final_stage(instructions) if word == "ENV")
    assert "HF_HUB_OFFLINE=1" in env and "ARCS_HOME=/data/arcs" in env


def test_dockerfile_copies_what_exists_and_is_not_ignored() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    sources: list[str] = []
    for word, arg in dockerfile_instructions(DOCKERFILE):
        if word == "COPY" and "--from=" not in arg:
            sources += shlex.split(arg)[:-1]
    assert "deploy/gunicorn.conf.py" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source not in ignored and source.split("/")[0] not in ignored, f"{source} is in .dockerignore"
    for secret in ("deploy/.env", "deploy/secrets", "**/*.pem", ".git", ".venv"):
        assert secret in ignored


def test_dockerfile_health_check_hits_a_route(tmp_path: Path) -> None:
    checks = [arg for word, arg in final_stage(dockerfile_instructions(DOCKERFILE)) if word == "HEALTHCHECK"]
    assert len(checks) == 1
    paths = re.findall(r"127\.0\.0\.1:8000(/\w+)", checks[0])
    assert paths == ["/healthz"]
    assert set(paths) <= app_routes(tmp_path)


def test_runner_image_is_unprivileged_and_documents_its_isolation() -> None:
    final = final_stage(dockerfile_instructions(RUNNER_DOCKERFILE))
    users = [arg for word, arg in final if word == "USER"]
    assert len(users) == 1 and not users[0].startswith("0") and users[0] != "root"
    header = RUNNER_DOCKERFILE.read_text(encoding="utf-8")
    for flag in ("--network none", "--read-only", "--cap-drop ALL", "--runtime runsc", "/workspace"):
        assert flag in header


def test_runner_image_mirrors_docker_runner_argv() -> None:
    from runners.docker import DockerOptions, docker_run_argv

    argv = docker_run_argv(
        docker="docker",
        name="n",
        options=DockerOptions(image="arcs-runner:0.1.0", runtime="runsc"),
        user="65534:65534",
        workspace=Path("/w"),
        command="true",
        memory_mb=2048,
        network=False,
        env={},
    )
    header = RUNNER_DOCKERFILE.read_text(encoding="utf-8")
    # Every isolation flag DockerRunner passes is in the documented command line.
    for flag in (
        "--network",
        "--read-only",
        "--tmpfs",
        "--user",
        "--cap-drop",
        "--security-opt",
        "--pids-limit",
        "--runtime",
    ):
        assert flag in argv and flag in header, flag


# ------------------------------------------------------------------------------- compose


def test_compose_has_every_service_with_a_health_check() -> None:
    services = compose()["services"]
    assert set(services) == {"web", "worker", "redis", "postgres", "qdrant"}
    for name, service in services.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"
        assert service.get("restart") == "unless-stopped", name


def test_compose_arcs_services_wait_for_healthy_dependencies() -> None:
    services = compose()["services"]
    for name in ARCS_SERVICES:
        depends = services[name]["depends_on"]
        assert set(depends) == {"postgres", "redis", "qdrant"}, name
        assert all(dep["condition"] == "service_healthy" for dep in depends.values()), name
        assert services[name]["env_file"] == ".env"
        assert "arcs-home:/data/arcs" in services[name]["volumes"]
        assert "github_app_key" in services[name]["secrets"]


def test_compose_third_party_images_are_pinned() -> None:
    services = compose()["services"]
    for name in ("redis", "postgres", "qdrant"):
        image = services[name]["image"]
        repo, _, tag = image.rpartition(":")
        # PostgreSQL numbers its releases major.minor; the others major.minor.patch.
        assert repo and tag and tag != "latest" and re.search(r"\d+\.\d+", tag), image
    k8s_images = {container["image"] for _name, spec in pod_specs() for container in spec["containers"]}
    assert {services[name]["image"] for name in ("redis", "postgres", "qdrant")} <= k8s_images, (
        "compose and Kubernetes run the same versions"
    )


def test_compose_commands_are_cli_commands() -> None:
    services = compose()["services"]
    web = [interpolate(part) for part in services["web"]["command"]]
    worker = [interpolate(part) for part in services["worker"]["command"]]
    assert web[0] == "serve" and worker[0] == "worker"
    parses_as_cli(web)
    parses_as_cli(worker)
    probe = services["worker"]["healthcheck"]["test"]
    assert probe[:2] == ["CMD", "arcs"]
    parses_as_cli(probe[2:])
    assert "broker" in probe


def test_compose_web_health_check_hits_a_route(tmp_path: Path) -> None:
    test = " ".join(compose()["services"]["web"]["healthcheck"]["test"])
    paths = re.findall(r"127\.0\.0\.1:8000(/\w+)", test)
    assert paths == ["/readyz"]
    assert set(paths) <= app_routes(tmp_path)


def test_compose_containers_run_as_non_root() -> None:
    services = compose()["services"]
    for name in ARCS_SERVICES:
        assert services[name]["user"] == f"{ARCS_UID}:{ARCS_UID}"
        assert services[name]["read_only"] is True
        assert services[name]["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in services[name]["security_opt"]
    assert services["redis"]["user"] == "redis"
    assert services["postgres"]["user"] == "postgres"
    assert services["qdrant"]["image"].endswith("-unprivileged")
    for name, service in services.items():
        assert str(service.get("user", "")).split(":")[0] not in ("0", "root"), name


def test_compose_worker_allows_the_sandbox_and_nothing_more() -> None:
    services = compose()["services"]
    worker = services["worker"]["security_opt"]
    assert set(worker) == {
        "no-new-privileges:true",
        "seccomp=unconfined",
        "apparmor=unconfined",
        "systempaths=unconfined",
    }
    assert "privileged" not in services["worker"]
    assert "cap_add" not in services["worker"]
    # The web side runs no tests: it keeps Docker's default profiles.
    assert services["web"]["security_opt"] == ["no-new-privileges:true"]


def test_compose_secret_and_volumes_are_declared() -> None:
    data = compose()
    assert set(data["secrets"]) == {"github_app_key"}
    assert interpolate(data["secrets"]["github_app_key"]["file"]) == "./secrets/github-app.pem"
    named = {
        volume.split(":")[0] for service in data["services"].values() for volume in service.get("volumes", [])
    }
    assert named == set(data["volumes"]) == {"arcs-home", "postgres-data", "redis-data", "qdrant-data"}


def test_compose_points_arcs_at_its_own_services() -> None:
    env = {
        key: interpolate(str(value)) for key, value in compose()["services"]["worker"]["environment"].items()
    }
    settings = load_settings({key: value for key, value in env.items() if key.startswith("ARCS_")})
    assert settings.broker_url == "redis://:x@redis:6379/0"  # x: the ${REDIS_PASSWORD:?...}
    assert settings.qdrant_url == "http://qdrant:6333"
    assert (
        settings.sqlalchemy_url.startswith("postgresql://arcs:")
        and "@postgres:5432/arcs" in settings.sqlalchemy_url
    )
    assert str(settings.home) == "/data/arcs"


# --------------------------------------------------------------------------- environment


def compose_variables() -> set[str]:
    """Variables set in compose services' ``environment`` and the ones it interpolates."""
    names = interpolated_names(COMPOSE.read_text(encoding="utf-8"))
    for service in compose()["services"].values():
        names |= set(service.get("environment") or {})
    return names


def k8s_variables() -> set[str]:
    """Variables of the settings ConfigMap and of every container's ``env`` in deploy/k8s."""
    names: set[str] = set()
    for doc in manifests():
        if doc.get("kind") == "ConfigMap" and doc["metadata"]["name"] == "arcs-config":  # not files
            names |= set(doc.get("data") or {})
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []) if isinstance(spec, dict) else []:
            names |= {entry["name"] for entry in container.get("env", [])}
    return names


@pytest.mark.parametrize("where", ["compose", "env-example", "k8s"])
def test_every_variable_is_a_setting_or_documented(where: str) -> None:
    names = {"compose": compose_variables, "env-example": lambda: set(env_example()), "k8s": k8s_variables}[
        where
    ]()
    known = known_variables()
    assert names, where
    stray = sorted(name for name in names if name not in known and name not in NON_ARCS_VARIABLES)
    assert stray == [], f"{where}: not a setting and not documented: {stray}"


def test_env_example_lists_every_setting_and_every_interpolated_variable() -> None:
    listed = set(env_example())
    expected = {f"ARCS_{name.upper()}" for name in Settings.model_fields}
    expected -= {"ARCS_ANTHROPIC_API_KEY", "ARCS_ANTHROPIC_BASE_URL"}
    expected |= {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}
    assert sorted(expected - listed) == [], "settings missing from deploy/.env.example"
    interpolated = interpolated_names(COMPOSE.read_text(encoding="utf-8"))
    assert sorted(interpolated - listed) == [], (
        "compose.yaml interpolates variables .env.example does not name"
    )


def test_env_example_values_load_as_settings(tmp_path: Path) -> None:
    values = {
        key: value
        for key, value in env_example().items()
        if key.startswith("ARCS_") and "${" not in value and key in known_variables()
    }
    values["ARCS_HOME"] = str(tmp_path)
    settings = load_settings(values)
    assert settings.log_format == "json"
    assert settings.public_url.startswith("https://")


def test_deploy_state_is_git_ignored() -> None:
    if shutil.which("git") is None:  # pragma: no cover - git is a dependency of the tests
        pytest.skip("git is not installed")
    done = subprocess.run(
        ["git", "check-ignore", "deploy/.env", "deploy/secrets/github-app.pem"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.split() == ["deploy/.env", "deploy/secrets/github-app.pem"]
    kept = subprocess.run(["git", "check-ignore", "-q", "deploy/.env.example"], cwd=ROOT, check=False)
    assert kept.returncode == 1, "the template itself must be committed"


# ---------------------------------------------------------------------------- kubernetes


@pytest.mark.parametrize("path", k8s_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_k8s_yaml_parses_into_named_objects(path: Path) -> None:
    docs = k8s_docs(path)
    assert docs, path
    for doc in docs:
        assert doc.get("apiVersion") and doc.get("kind"), path
        if doc["kind"] != "Kustomization":
            assert doc["metadata"]["name"], path


@pytest.mark.parametrize("path", kustomizations(), ids=lambda p: str(p.parent.relative_to(K8S)))
def test_kustomization_lists_files_that_exist(path: Path) -> None:
    data = k8s_docs(path)[0]
    listed = list(data.get("resources", [])) + [
        patch["path"] for patch in data.get("patches", []) if "path" in patch
    ]
    assert listed
    for entry in listed:
        target = (path.parent / entry).resolve()
        assert target.exists(), f"{path}: {entry} does not exist"
        if target.is_dir():
            assert (target / "kustomization.yaml").is_file(), f"{entry} is not a kustomization"
    # Every manifest next to a kustomization is used, except the Secret template.
    siblings = {p.name for p in path.parent.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert siblings <= {Path(entry).name for entry in listed}, f"unused files in {path.parent}"


def test_secret_template_holds_placeholders_only_and_is_not_applied() -> None:
    template = K8S / "base" / "secret.example.yaml"
    base = k8s_docs(K8S / "base" / "kustomization.yaml")[0]
    assert "secret.example.yaml" not in base["resources"]
    for doc in k8s_docs(template):
        assert doc["kind"] == "Secret"
        for key, value in doc["stringData"].items():
            assert "REPLACE_ME" in value, f"{key} holds a value, not a placeholder"
    # No real Secret ships with the manifests: they only reference one.
    for path in k8s_files():
        if path.name != "secret.example.yaml":
            assert all(doc.get("kind") != "Secret" for doc in k8s_docs(path)), path


def test_k8s_secret_references_name_template_keys() -> None:
    template = {
        doc["metadata"]["name"]: set(doc["stringData"])
        for doc in k8s_docs(K8S / "base" / "secret.example.yaml")
    }
    seen = 0
    for _name, spec in pod_specs():
        for container in spec["containers"]:
            for entry in container.get("env", []):
                ref = entry.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    seen += 1
                    assert ref["key"] in template[ref["name"]], ref
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                assert volume["secret"]["secretName"] in template
    assert seen


def test_k8s_commands_are_cli_commands() -> None:
    found = {}
    for name, container in arcs_containers():
        parses_as_cli(container["args"])
        found[name] = container["args"][0]
        assert "command" not in container, "keep the image's ENTRYPOINT (arcs)"
    assert found == {"arcs-web": "serve", "arcs-worker": "worker"}
    patch = k8s_docs(K8S / "overlays" / "production" / "worker.yaml")[0]
    parses_as_cli(patch["spec"]["template"]["spec"]["containers"][0]["args"])


def test_k8s_probes_hit_routes(tmp_path: Path) -> None:
    routes = app_routes(tmp_path)
    paths: dict[str, str] = {}
    for _name, container in arcs_containers():
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe in container:
                paths[f"{container['name']}.{probe}"] = container[probe]["httpGet"]["path"]
    assert paths == {
        "web.startupProbe": "/healthz",
        "web.livenessProbe": "/healthz",
        "web.readinessProbe": "/readyz",
    }
    assert set(paths.values()) <= routes


def test_k8s_pods_run_as_non_root_with_no_capabilities() -> None:
    seen = set()
    for name, spec in pod_specs():
        seen.add(name)
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert "privileged" not in context and "add" not in context["capabilities"], name
            assert container["resources"]["requests"] and container["resources"]["limits"], name
            if container["image"].split(":")[0] == "arcs":
                assert pod["runAsUser"] == ARCS_UID
            else:
                repo, _, tag = container["image"].rpartition(":")
                assert repo and tag != "latest", container["image"]
    assert seen == {"arcs-web", "arcs-worker", "arcs-redis", "arcs-postgres", "arcs-qdrant"}


def test_k8s_only_the_worker_relaxes_the_sandbox_profile() -> None:
    for name, spec in pod_specs():
        profile = spec["securityContext"]["seccompProfile"]["type"]
        if name == "arcs-worker":
            assert profile == "Unconfined"
            assert spec["securityContext"]["appArmorProfile"]["type"] == "Unconfined"
            assert spec["hostUsers"] is False
            assert spec["containers"][0]["securityContext"]["procMount"] == "Unmasked"
        else:
            assert profile == "RuntimeDefault", name
            assert "hostUsers" not in spec, name


def test_k8s_config_loads_as_settings(tmp_path: Path) -> None:
    config = k8s_docs(K8S / "base" / "config.yaml")[0]["data"]
    values = {key: str(value) for key, value in config.items()}
    values["ARCS_HOME"] = str(tmp_path)
    settings = load_settings(values)
    assert settings.broker_url is None  # it carries Redis's password: from the Secret (broker-url)
    assert settings.qdrant_url == "http://arcs-qdrant:6333"
    assert (settings.setup_network, settings.setup_network_allow) == ("registries", ())
    assert settings.app_id is None  # "" counts as unset until the overlay fills it in
    # A worker pod has no container engine: its tests run in bubblewrap, whatever the default.
    assert settings.runner == "bubblewrap"


def test_env_example_documents_a_docker_runner_that_loads(tmp_path: Path) -> None:
    example = env_example()
    assert example["ARCS_RUNNER"] == "bubblewrap"  # the compose worker is set up for bubblewrap
    settings = load_settings(
        {
            "ARCS_HOME": str(tmp_path),
            "ARCS_RUNNER": "docker",
            "ARCS_RUNNER_IMAGE": example["ARCS_RUNNER_IMAGE"],
            "ARCS_RUNNER_RUNTIME": example["ARCS_RUNNER_RUNTIME"],
        }
    )
    assert (settings.runner, settings.runner_runtime) == ("docker", "runsc")
    # The suggested image is the one deploy/runner/Dockerfile's header says how to build.
    assert f"-t {settings.runner_image} deploy/runner" in RUNNER_DOCKERFILE.read_text(encoding="utf-8")
    assert f"-t {settings.runner_image} deploy/runner" in ENV_EXAMPLE.read_text(encoding="utf-8")


def test_k8s_worker_is_autoscaled_not_pinned() -> None:
    docs = k8s_docs(K8S / "base" / "worker.yaml")
    deployment = next(doc for doc in docs if doc["kind"] == "Deployment")
    hpa = next(doc for doc in docs if doc["kind"] == "HorizontalPodAutoscaler")
    assert "replicas" not in deployment["spec"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("path", kustomizations(), ids=lambda p: str(p.parent.relative_to(K8S)))
def test_kustomize_renders(path: Path) -> None:
    done = subprocess.run(
        ["kubectl", "kustomize", str(path.parent)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rendered = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    kinds = {(doc["kind"], doc["metadata"]["name"]) for doc in rendered}
    assert ("Deployment", "arcs-web") in kinds and ("Deployment", "arcs-worker") in kinds
    images = {
        container["image"]
        for doc in rendered
        if doc["kind"] == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
    }
    assert all(":" in image for image in images), images
    if path.parent.name == "production":
        assert ("StatefulSet", "arcs-postgres") not in kinds
        assert ("Ingress", "arcs-web") in kinds
        assert {doc["metadata"].get("namespace") for doc in rendered if doc["kind"] != "Namespace"} == {
            "arcs"
        }


# ------------------------------------------------------------------ data store credentials

INIT_SCRIPT = DEPLOY / "postgres" / "init-arcs.sh"


def compose_env(service: str) -> dict[str, str]:
    return {
        key: str(value) for key, value in (compose()["services"][service].get("environment") or {}).items()
    }


def container_env(workload: str) -> dict[str, dict[str, Any]]:
    """name -> env entry of the first container of ``workload``."""
    spec = dict(pod_specs())[workload]
    return {entry["name"]: entry for entry in spec["containers"][0].get("env", [])}


def test_compose_redis_wants_a_password_and_arcs_has_it() -> None:
    services = compose()["services"]
    command = services["redis"]["command"]
    assert command[0] == "redis-server"
    assert (
        command[command.index("--requirepass") + 1] == "${REDIS_PASSWORD:?set REDIS_PASSWORD in deploy/.env}"
    )
    assert compose_env("redis")["REDISCLI_AUTH"].startswith("${REDIS_PASSWORD:?")
    # redis-cli exits 0 on NOAUTH: the check must look for PONG.
    assert services["redis"]["healthcheck"]["test"] == ["CMD-SHELL", "redis-cli ping | grep -q PONG"]
    broker = compose_env("worker")["ARCS_BROKER_URL"]
    assert broker.startswith("redis://:${REDIS_PASSWORD:?") and broker.endswith("@redis:6379/0")
    assert interpolate(broker, {"REDIS_PASSWORD": "pw"}) == "redis://:pw@redis:6379/0"


def test_compose_arcs_connects_as_a_role_that_is_not_the_superuser() -> None:
    postgres = compose_env("postgres")
    assert postgres["POSTGRES_USER"] == "postgres"  # the superuser the image creates
    assert postgres["APP_DB_USER"] == "arcs" and postgres["APP_DB_NAME"] == "arcs"
    assert postgres["APP_DB_PASSWORD"].startswith("${APP_DB_PASSWORD:?")
    assert postgres["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    url = compose_env("worker")["ARCS_DATABASE_URL"]
    assert url.startswith("postgresql://arcs:${APP_DB_PASSWORD:?") and "POSTGRES_PASSWORD" not in url
    assert url.endswith("@postgres:5432/arcs")
    (mount,) = compose()["services"]["postgres"]["configs"]
    assert mount["target"].startswith("/docker-entrypoint-initdb.d/") and mount["target"].endswith(".sh")
    assert (COMPOSE.parent / compose()["configs"][mount["source"]]["file"]).resolve() == INIT_SCRIPT
    assert INIT_SCRIPT.stat().st_mode & 0o111, "executed, not sourced, by the image's entrypoint"


def test_k8s_redis_wants_a_password_and_arcs_has_it() -> None:
    env = container_env("arcs-redis")
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "arcs-secrets",
        "key": "redis-password",
    }
    assert env["REDISCLI_AUTH"]["valueFrom"] == env["REDIS_PASSWORD"]["valueFrom"]
    container = dict(pod_specs())["arcs-redis"]["containers"][0]
    args = container["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"  # expanded by the kubelet
    assert "grep -q PONG" in " ".join(container["readinessProbe"]["exec"]["command"])
    for workload in ("arcs-web", "arcs-worker"):
        ref = container_env(workload)["ARCS_BROKER_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "arcs-secrets", "key": "broker-url"}, workload
        ref = container_env(workload)["ARCS_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "arcs-secrets", "key": "database-url"}, workload


def test_k8s_arcs_connects_as_a_role_that_is_not_the_superuser() -> None:
    env = container_env("arcs-postgres")
    assert env["POSTGRES_USER"]["value"] == "postgres"
    assert env["APP_DB_USER"]["value"] == "arcs" and env["APP_DB_NAME"]["value"] == "arcs"
    superuser = env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"]
    app = env["APP_DB_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"]
    assert superuser != app
    spec = dict(pod_specs())["arcs-postgres"]
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    init = next(name for name, m in mounts.items() if m["mountPath"] == "/docker-entrypoint-initdb.d")
    config_name = volumes[init]["configMap"]["name"]
    assert volumes[init]["configMap"]["defaultMode"] == 0o555
    (config,) = [
        doc for doc in manifests() if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == config_name
    ]
    (script,) = config["data"].values()
    assert script == INIT_SCRIPT.read_text(encoding="utf-8"), (
        "keep postgres-init.yaml in step with init-arcs.sh"
    )
    secrets = {
        doc["metadata"]["name"]: doc["stringData"] for doc in k8s_docs(K8S / "base" / "secret.example.yaml")
    }
    data = secrets["arcs-secrets"]
    assert data["database-url"].startswith("postgresql://arcs:REPLACE_ME@")
    assert data["broker-url"] == "redis://:REPLACE_ME@arcs-redis:6379/0"
    assert {superuser, app, "redis-password"} <= set(data)


@pytest.mark.postgres
def test_init_script_makes_an_unprivileged_owner_that_can_run_arcs(pg_create_db: Any) -> None:
    """Run deploy/postgres/init-arcs.sh against the local server, then open ARCS's store as the role."""
    import uuid

    from sqlalchemy import create_engine, text

    from bot.store.store import Store
    from tests.conftest import PG_ADMIN_URL

    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    name = f"arcs_init_{uuid.uuid4().hex[:10]}"
    env = {
        "PATH": "/usr/bin:/bin",
        "PGHOST": "127.0.0.1",
        "POSTGRES_USER": "postgres",
        "POSTGRES_DB": "postgres",
        "APP_DB_USER": name,
        "APP_DB_NAME": name,
        "APP_DB_PASSWORD": "not-used-with-trust-auth",
    }
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        done = subprocess.run(["sh", str(INIT_SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        with admin.connect() as conn:
            role = conn.execute(
                text(
                    "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin "
                    "FROM pg_roles WHERE rolname = :n"
                ),
                {"n": name},
            ).one()
            owner = conn.execute(
                text("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = :n"), {"n": name}
            ).scalar_one()
        assert tuple(role) == (False, False, False, False, False, True)
        assert owner == name
        # ARCS creates and migrates its schema as that role...
        store = Store.open(f"postgresql://{name}@127.0.0.1:5432/{name}")
        store.engine.dispose()
        # ...and can do nothing a superuser could.
        app = create_engine(
            f"postgresql+psycopg://{name}@127.0.0.1:5432/{name}", isolation_level="AUTOCOMMIT"
        )
        try:
            with app.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
                for statement in (
                    "CREATE ROLE arcs_escalation",
                    f'CREATE DATABASE "{name}_other"',
                    "SELECT pg_read_file('/etc/hostname')",
                    "COPY (SELECT 1) TO PROGRAM 'true'",
                ):
                    with pytest.raises(Exception, match=r"(?i)permission denied|must be superuser|privilege"):
                        conn.execute(text(statement))
        finally:
            app.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'DROP ROLE IF EXISTS "{name}"'))
        admin.dispose()
