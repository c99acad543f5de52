"""Recording stand-ins for az, kubectl, helm, kind, docker, curl and dotnet while a deploy guide is rehearsed.

Each stand-in knows the commands the guides run, checks them the way the real tool or Azure would where
that is what a reader would hit (a file that does not exist, a Secret the release does not create, a
soft-deleted Key Vault of the same name, a token request without a client secret), keeps what they
create in one state file, and answers the few outputs the guides read. A command it does not know fails
the rehearsal: a guide can only say what is rehearsed.

`helm upgrade` of the repository's chart runs the real helm: `helm template` with exactly the values
files and flags the guide passes (plus the release's earlier ones with --reuse-values), then
kubeconform, then a check that no setting an earlier upgrade made is lost (the step overlays aside,
which replace each other by design).

Called as `standin.py <tool> <arguments...>` by the small wrappers the rehearsal puts on PATH.
"""

import base64
import fcntl
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import uuid

import yaml

STATE_DIR = os.environ["REHEARSAL_STATE"]
STATE_FILE = os.path.join(STATE_DIR, "state.json")
LOG_FILE = os.path.join(STATE_DIR, "commands.log")


class Refused(Exception):
    """What the real tool (or Azure) would answer with an error; the stand-in exits non-zero with it."""


def fail(message):
    raise Refused(message)


def load_state():
    if os.path.exists(STATE_FILE):
        with open(STATE_FILE, encoding="utf-8") as f:
            return json.load(f)
    return {}


def save_state(state):
    with open(STATE_FILE + ".tmp", "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(STATE_FILE + ".tmp", STATE_FILE)


def guid(*parts):
    """A stable GUID per name, so a rehearsal's answers are the same every run."""
    return str(uuid.UUID(hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]))


def existing_file(path, what):
    if not os.path.isfile(path):
        fail(f"{what} '{path}' does not exist (working directory {os.getcwd()})")
    return path


def parse(tool, args, with_value=(), flags=(), multi=(), short=None):
    """Positional words and options. Options in multi take every following word up to the next option (az's nargs='*')."""
    short = short or {}
    positional, options = [], {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional.append("--")
            positional.extend(args[i + 1:])
            break
        if arg.startswith("-") and arg != "-" and not re.fullmatch(r"-\d+", arg):
            name, eq, value = arg.partition("=")
            name = short.get(name, name)
            if name in flags:
                options.setdefault(name, []).append(value if eq else True)
            elif name in with_value:
                if not eq:
                    i += 1
                    if i >= len(args):
                        fail(f"{tool}: {name} needs a value")
                    value = args[i]
                options.setdefault(name, []).append(value)
            elif name in multi:
                values = [value] if eq else []
                while i + 1 < len(args) and not args[i + 1].startswith("-"):
                    i += 1
                    values.append(args[i])
                options.setdefault(name, []).extend(values)
            else:
                fail(f"the {tool} stand-in does not know the option {name} (in: {tool} {' '.join(args)})")
        else:
            positional.append(arg)
        i += 1
    return positional, options


def one(options, name, required=True):
    values = options.get(name)
    if not values:
        if required:
            fail(f"{name} is required")
        return None
    return values[-1]


def emit(value, output, query):
    """Prints an answer the way az does: -o tsv plain, otherwise JSON."""
    if output == "tsv":
        if isinstance(value, list):
            print("\n".join(str(v) for v in value))
        elif value is not None:
            print(value if not isinstance(value, bool) else str(value).lower())
    elif output in (None, "json"):
        print(json.dumps(value, indent=2))
    elif output == "none":
        pass
    elif output == "table":
        print(value if isinstance(value, str) else json.dumps(value))
    else:
        fail(f"unknown output format {output}")


# ---------------------------------------------------------------- az

AZ_VALUE = {"--name", "-n", "--resource-group", "-g", "--location", "-l", "--subscription", "--template-file", "-f", "--query", "-o", "--output",
            "--registry", "--image", "--file", "--build-arg", "--display-name", "--sign-in-audience", "--app-roles", "--requested-access-token-version",
            "--id", "--api", "--years", "--account-name", "--role-definition-id", "--scope", "--principal-id", "--vault-name", "--value", "--role",
            "--assignee-object-id", "--assignee-principal-type", "--identity-type", "--load-test-resource", "--test-id", "--load-test-config-file",
            "--test-run-id", "--encoding"}
AZ_FLAGS = {"--yes", "--no-wait", "--upgrade", "--only-show-errors"}
AZ_MULTI = {"--parameters", "-p", "--api-permissions", "--env", "--secret", "--identifier-uris"}
AZ_SHORT = {"-n": "--name", "-g": "--resource-group", "-l": "--location", "-f": "--template-file", "-o": "--output", "-p": "--parameters"}

SECRETS_OFFICER = "Key Vault Secrets Officer"
SECRETS_USER = "Key Vault Secrets User"


def az(state, args):
    positional, o = parse("az", args, AZ_VALUE, AZ_FLAGS, AZ_MULTI, AZ_SHORT)
    command = " ".join(positional)
    query, output = one(o, "--query", False), one(o, "--output", False)
    outputs = json.load(open(os.environ["REHEARSAL_AZ_OUTPUTS"], encoding="utf-8"))
    azure = state.setdefault("azure", {"groups": {}, "deployments": {}, "deleted_vaults": [], "apps": {}, "roles": [], "secrets": {}, "images": [], "load": {}})

    def need_login():
        if not state.get("logged_in"):
            fail("Please run 'az login' to setup account.")

    def group():
        name = one(o, "--resource-group")
        if name not in azure["groups"]:
            fail(f"(ResourceGroupNotFound) Resource group '{name}' could not be found.")
        return name

    def answer(value, allowed_query=None):
        if query != allowed_query:
            fail(f"the az stand-in answers '{command}' with --query {allowed_query!r}, not {query!r}")
        emit(value, output, query)

    if command == "login":
        state["logged_in"] = True
        return
    need_login()
    if command == "account set":
        one(o, "--subscription")
    elif command == "vm list-usage":
        one(o, "--location")
        print("Name                               CurrentValue    Limit\n---------------------------------  --------------  -------\nStandard DSv5 Family vCPUs         0               100\nTotal Regional vCPUs               0               100")
    elif command == "group create":
        azure["groups"][one(o, "--name")] = {"location": one(o, "--location")}
        emit({"name": one(o, "--name"), "properties": {"provisioningState": "Succeeded"}}, output, query)
    elif command == "group delete":
        name = one(o, "--name")
        if name not in azure["groups"]:
            fail(f"(ResourceGroupNotFound) Resource group '{name}' could not be found.")
        if not o.get("--yes"):
            fail("az group delete asks for confirmation: give --yes in a script")
        del azure["groups"][name]
        for key in [k for k in azure["deployments"] if k.startswith(name + "/")]:
            del azure["deployments"][key]
        # Key Vault soft delete: the vault lives on, deleted, for its retention period.
        vault = outputs["keyVaultName"]
        if vault in azure.get("vaults", {}):
            del azure["vaults"][vault]
            azure["deleted_vaults"].append(vault)
        azure["load"] = {}
        if state.get("cluster", {}).get("kind") == "aks":
            del state["cluster"]  # the AKS cluster went with its resource group
    elif command == "deployment group create":
        name, rg = one(o, "--name"), group()
        template = existing_file(one(o, "--template-file"), "template")
        if not template.endswith("main.bicep"):
            fail(f"the rehearsal knows infra/main.bicep's outputs, not {template}'s")
        parameters = {}
        for p in o.get("--parameters", []):
            if p.endswith(".bicepparam"):
                for line in open(existing_file(p, "parameters file"), encoding="utf-8"):
                    m = re.match(r"^param\s+(\w+)\s*=\s*'?([^'\n]*?)'?\s*$", line)
                    if m:
                        parameters[m.group(1)] = m.group(2)
            elif "=" in p:
                key, _, value = p.partition("=")
                if key not in outputs["parameters"]:
                    fail(f"main.bicep has no parameter '{key}'")
                parameters[key] = value
            else:
                fail(f"the az stand-in does not read parameters '{p}'")
        vault = outputs["keyVaultName"]
        if vault in azure["deleted_vaults"]:
            fail(f"(ConflictError) A vault with the same name already exists in deleted state. You need to either recover or purge existing key vault. Vault name: {vault}")
        azure.setdefault("vaults", {})[vault] = rg
        azure["deployments"][f"{rg}/{name}"] = parameters
    elif command == "deployment group show":
        key = f"{group()}/{one(o, '--name')}"
        if key not in azure["deployments"]:
            fail(f"(DeploymentNotFound) Deployment '{one(o, '--name')}' could not be found.")
        if query == "properties.parameters":
            emit({k: {"type": "String", "value": v} for k, v in azure["deployments"][key].items()}, output, query)
            return
        m = re.fullmatch(r"properties\.outputs\.(\w+)\.value(?:\.(\w+))?", query or "")
        if not m or m.group(1) not in outputs["outputs"]:
            fail(f"infra/main.bicep has no output for --query {query} (outputs: {', '.join(outputs['outputs'])})")
        value = outputs["outputs"][m.group(1)]
        if m.group(2) is not None:
            if not isinstance(value, dict) or m.group(2) not in value:
                fail(f"output {m.group(1)} has no key '{m.group(2)}'")
            value = value[m.group(2)]
        emit(value, output, query)
    elif command == "acr build .":
        registry = one(o, "--registry")
        if f"{registry}.azurecr.io" != outputs["outputs"]["registryLoginServer"]:
            fail(f"(ResourceNotFound) The registry '{registry}' could not be found")
        dockerfile(one(o, "--file"), o.get("--build-arg", []))
        azure["images"].append(f"{registry}.azurecr.io/{one(o, '--image')}")
    elif command == "aks get-credentials":
        group()
        if one(o, "--name") != outputs["outputs"]["aksName"]:
            fail(f"(ResourceNotFound) The cluster '{one(o, '--name')}' was not found")
        state["cluster"] = new_cluster("aks", one(o, "--name"))
    elif command == "ad app create":
        app_id = guid("app", one(o, "--display-name"))
        roles = []
        if (file := one(o, "--app-roles", False)) is not None:
            roles = json.load(open(existing_file(file.lstrip("@"), "app roles file"), encoding="utf-8"))
        azure["apps"][app_id] = {"displayName": one(o, "--display-name"), "roles": roles, "sp": False, "permissions": [], "consented": False,
                                 "tokenVersion": one(o, "--requested-access-token-version", False), "identifierUris": o.get("--identifier-uris", [])}
        answer(app_id, "appId")
    elif command == "ad app update":
        app = application(azure, one(o, "--id"))
        if o.get("--identifier-uris"):
            app["identifierUris"] = o["--identifier-uris"]
        if one(o, "--requested-access-token-version", False):
            app["tokenVersion"] = one(o, "--requested-access-token-version")
    elif command == "ad sp create":
        application(azure, one(o, "--id"))["sp"] = True
        if query is not None:
            answer(guid("sp", one(o, "--id")), "id")
    elif command == "ad app show":
        app = application(azure, one(o, "--id"))
        m = re.fullmatch(r"appRoles\[\?value=='([\w.]+)'\]\.id", query or "")
        if not m:
            fail(f"the az stand-in answers 'ad app show' with --query appRoles[?value=='<role>'].id, not {query}")
        ids = [r["id"] for r in app["roles"] if r["value"] == m.group(1)]
        if not ids:
            fail(f"the app {one(o, '--id')} has no app role {m.group(1)}")
        emit(ids[0], output, query)
    elif command == "ad app permission add":
        client, api = application(azure, one(o, "--id")), application(azure, one(o, "--api"))
        for permission in o.get("--api-permissions", []):
            role_id, _, kind = permission.partition("=")
            if kind != "Role" or role_id not in [r["id"] for r in api["roles"]]:
                fail(f"'{permission}' is not an application permission (app role) of the API")
            client["permissions"].append(role_id)
    elif command == "ad app permission admin-consent":
        client = application(azure, one(o, "--id"))
        if not client["sp"]:
            fail("the client app has no service principal in the tenant: az ad sp create --id <client app id>")
        for api in azure["apps"].values():
            if any(r["id"] in client["permissions"] for r in api["roles"]) and not api["sp"]:
                fail("the API app has no service principal in the tenant: az ad sp create --id <API app id>")
        client["consented"] = True
    elif command == "ad app credential reset":
        app = application(azure, one(o, "--id"))
        app["secret"] = "secret-" + guid("secret", one(o, "--id"))[:8]
        answer(app["secret"], "password")
    elif command == "ad signed-in-user show":
        answer(guid("user"), "id")
    elif command == "ad app delete":
        application(azure, one(o, "--id"))
        del azure["apps"][one(o, "--id")]
    elif command == "cosmosdb sql role assignment create":
        group()
        if one(o, "--account-name") != outputs["outputs"]["cosmosAccountName"]:
            fail(f"(NotFound) Database account '{one(o, '--account-name')}' not found")
        one(o, "--role-definition-id"), one(o, "--scope"), one(o, "--principal-id")
    elif command == "keyvault show":
        vault = live_vault(azure, one(o, "--name"))
        answer(vault_id(outputs, vault), "id")
    elif command == "role assignment create":
        role, scope = one(o, "--role"), one(o, "--scope")
        if role not in (SECRETS_OFFICER, SECRETS_USER):
            fail(f"the az stand-in assigns Key Vault roles only, not '{role}'")
        if not scope.startswith(vault_id(outputs, outputs["keyVaultName"])):
            fail(f"scope '{scope}' is not the Key Vault or one of its secrets")
        azure["roles"].append({"role": role, "principal": one(o, "--assignee-object-id"), "type": one(o, "--assignee-principal-type"), "scope": scope})
    elif command == "keyvault secret set":
        vault = live_vault(azure, one(o, "--vault-name"))
        me = guid("user")
        if not any(r["role"] == SECRETS_OFFICER and r["principal"] == me and r["scope"] == vault_id(outputs, vault) for r in azure["roles"]):
            fail(f"(Forbidden) Caller is not authorized to perform action on resource: the vault '{vault}' uses Azure RBAC, and writing a secret needs {SECRETS_OFFICER}")
        if one(o, "--file", False) is not None:
            value = open(existing_file(one(o, "--file"), "file"), encoding="utf-8").read() if one(o, "--file") != "/dev/stdin" else sys.stdin.read()
        else:
            value = one(o, "--value")
        if not value:
            fail("the secret's value is empty")
        uri = f"https://{vault}.vault.azure.net/secrets/{one(o, '--name')}/{guid('version', one(o, '--name'))[:32].replace('-', '')}"
        azure["secrets"][uri] = {"name": one(o, "--name"), "value": value}
        answer(uri, "id")
    elif command == "keyvault delete":
        vault = live_vault(azure, one(o, "--name"))
        del azure["vaults"][vault]
        azure["deleted_vaults"].append(vault)
    elif command == "keyvault purge":
        vault = one(o, "--name")
        if vault not in azure["deleted_vaults"]:
            fail(f"(DeletedVaultNotFound) Deleted vault '{vault}' not found")
        azure["deleted_vaults"].remove(vault)
    elif command == "extension add":
        if one(o, "--name") != "load":
            fail(f"the rehearsal knows the 'load' extension, not '{one(o, '--name')}'")
        state["load_extension"] = True
    elif command.startswith("load "):
        if not state.get("load_extension"):
            fail("az load needs the load extension: az extension add --name load")
        load(azure, outputs, command, o, group, answer)
    else:
        fail(f"the az stand-in does not know 'az {command}'")


def application(azure, app_id):
    if app_id not in azure["apps"]:
        fail(f"Resource '{app_id}' does not exist or one of its queried reference-property objects are not present.")
    return azure["apps"][app_id]


def live_vault(azure, name):
    if name not in azure.get("vaults", {}):
        fail(f"The Vault '{name}' not found within subscription.")
    return name


def vault_id(outputs, vault):
    return f"/subscriptions/rehearsal/resourceGroups/dronedelivery/providers/Microsoft.KeyVault/vaults/{vault}"


def load(azure, outputs, command, o, group, answer):
    """Azure Load Testing: the resource, its identity's access to the secret, and the Locust tests."""
    rg = group()
    if command == "load create":
        identity = one(o, "--identity-type", False)
        azure["load"][one(o, "--name")] = {"principal": guid("load", one(o, "--name")) if identity == "SystemAssigned" else None, "tests": {}}
        return
    resource = azure["load"].get(one(o, "--name", False) or one(o, "--load-test-resource"))
    if resource is None:
        fail("(ResourceNotFound) the Azure Load Testing resource does not exist")
    if command == "load show":
        answer(resource["principal"], "identity.principalId")
    elif command == "load test create":
        config_file = existing_file(one(o, "--load-test-config-file"), "load test configuration")
        config = yaml.safe_load(open(config_file, encoding="utf-8"))
        existing_file(os.path.join(os.path.dirname(config_file), config["testPlan"]), "test plan")
        if config.get("testId") != one(o, "--test-id"):
            fail(f"--test-id {one(o, '--test-id')} is not the configuration's testId {config.get('testId')}")
        env = {e["name"]: e["value"] for e in config.get("env", [])}
        env.update(dict(p.split("=", 1) for p in o.get("--env", [])))
        secrets = dict(p.split("=", 1) for p in o.get("--secret", []))
        if not env.get("LOCUST_HOST"):
            fail("the Locust test needs LOCUST_HOST (--env LOCUST_HOST=http://<host>)")
        if env.get("DRONEDELIVERY_TOKEN_SCOPE"):
            for name in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID"):
                if not env.get(name):
                    fail(f"DRONEDELIVERY_TOKEN_SCOPE needs {name} (--env {name}=...)")
            uri = secrets.get("AZURE_CLIENT_SECRET")
            if uri not in azure["secrets"]:
                fail("DRONEDELIVERY_TOKEN_SCOPE needs AZURE_CLIENT_SECRET as a Key Vault secret reference (--secret AZURE_CLIENT_SECRET=<secret URI>)")
            secret_scope = f"{vault_id(outputs, outputs['keyVaultName'])}/secrets/{azure['secrets'][uri]['name']}"
            if not any(r["role"] == SECRETS_USER and r["principal"] == resource["principal"] and r["scope"] in (secret_scope, vault_id(outputs, outputs["keyVaultName"])) for r in azure["roles"]):
                fail("the Azure Load Testing resource's identity cannot read the secret: it needs Key Vault Secrets User on it")
        resource["tests"][one(o, "--test-id")] = env
    elif command == "load test-run create":
        if one(o, "--test-id") not in resource["tests"]:
            fail(f"Test with given test ID : {one(o, '--test-id')} does not exist.")
        one(o, "--test-run-id")
    else:
        fail(f"the az stand-in does not know 'az {command}'")


def dockerfile(file, build_args):
    """The Dockerfile exists; one that builds a project of src/ (it declares ARG PROJECT) is told which, as its first RUN checks."""
    text = open(existing_file(file, "Dockerfile"), encoding="utf-8").read()
    if not re.search(r"^ARG PROJECT\b", text, re.M):
        return
    project = next((a.split("=", 1)[1] for a in build_args if a.startswith("PROJECT=")), None)
    if project is None or not os.path.isdir(os.path.join("src", project)):
        fail(f"PROJECT={project} names no project folder under src/ (src/Dockerfile builds one of those)")


# ---------------------------------------------------------------- the cluster

def new_cluster(kind, name, host_ports=None):
    namespaces = {"default": {}, "kube-system": {}}
    if kind == "aks":
        # The application routing add-on's managed NGINX and its public IP.
        namespaces["app-routing-system"] = {"Service/nginx": {"kind": "Service", "ip": "20.31.42.53", "ports": [80, 443]}}
    return {"kind": kind, "name": name, "namespaces": namespaces, "releases": {}, "host_ports": host_ports or {}, "port_forwards": {}, "images": []}


def cluster(state):
    if "cluster" not in state:
        fail("The connection to the server localhost:8080 was refused - did you specify the right host or port? (no cluster: kind create cluster or az aks get-credentials first)")
    return state["cluster"]


def namespace(state, name):
    c = cluster(state)
    if name not in c["namespaces"]:
        fail(f'Error from server (NotFound): namespaces "{name}" not found')
    return c["namespaces"][name]


def find(state, ns, kind, name):
    objects = namespace(state, ns)
    key = f"{kind}/{name}"
    if key not in objects:
        fail(f'Error from server (NotFound): {kind.lower()}s "{name}" not found (in namespace {ns})')
    return objects[key]


KUBECTL_VALUE = {"--namespace", "-n", "-f", "--filename", "-o", "--output", "--context", "--from-literal", "--from-file", "--cert", "--key", "--tail"}
KUBECTL_FLAGS = {"--all-namespaces", "-A"}
KUBECTL_KINDS = {"job": "Job", "jobs": "Job", "deploy": "Deployment", "deployment": "Deployment", "svc": "Service", "service": "Service",
                 "secret": "Secret", "ingress": "Ingress", "pod": "Pod", "pods": "Pod"}


def kubectl(state, args):
    positional, o = parse("kubectl", args, KUBECTL_VALUE, KUBECTL_FLAGS, (), {"-n": "--namespace", "-o": "--output", "--filename": "-f"})
    ns = one(o, "--namespace", False) or "default"
    verb = positional[0] if positional else ""
    if verb == "cluster-info":
        c = cluster(state)
        if one(o, "--context", False) not in (None, f"kind-{c['name']}" if c["kind"] == "kind" else c["name"]):
            fail(f"context \"{one(o, '--context')}\" does not exist")
        print(f"Kubernetes control plane is running at https://127.0.0.1:6443")
        return
    if verb == "apply":
        file = existing_file(one(o, "-f"), "manifest")
        for document in yaml.safe_load_all(open(file, encoding="utf-8")):
            validate([document])
            if document["kind"] == "Namespace":
                cluster(state)["namespaces"].setdefault(document["metadata"]["name"], {})
                continue
            obj = {"kind": document["kind"]}
            if document["kind"] == "Service":
                obj["ports"] = [p["port"] for p in document["spec"]["ports"]]
            if document["kind"] == "Deployment":
                c = cluster(state)
                check_images(state, c, [x["image"] for x in document["spec"]["template"]["spec"]["containers"]], file)
            namespace(state, document["metadata"].get("namespace", ns))[f"{document['kind']}/{document['metadata']['name']}"] = obj
        return
    if verb == "get":
        kind = KUBECTL_KINDS.get(positional[1]) if len(positional) > 1 else None
        if kind is None:
            fail(f"the kubectl stand-in does not get '{' '.join(positional[1:])}'")
        if len(positional) == 2:
            namespace(state, ns)
            print(f"(the {kind}s of namespace {ns})")
            return
        obj = find(state, ns, kind, positional[2])
        jsonpath = one(o, "--output", False)
        if jsonpath is None:
            print(f"{kind} {positional[2]}")
        elif kind == "Secret" and (m := re.fullmatch(r"jsonpath=\{\.data\.([\w.-]+)\}", jsonpath)):
            if m.group(1) not in obj.get("data", {}):
                fail(f"the Secret {positional[2]} has no key {m.group(1)}")
            sys.stdout.write(obj["data"][m.group(1)])
        elif kind == "Service" and jsonpath == "jsonpath={.status.loadBalancer.ingress[0].ip}":
            if "ip" not in obj:
                fail(f"the Service {positional[2]} has no load balancer IP")
            sys.stdout.write(obj["ip"])
        else:
            fail(f"the kubectl stand-in does not answer -o {jsonpath} for {kind}")
        return
    if verb == "logs":
        target = positional[1] if len(positional) > 1 else ""
        kind_name = target.split("/", 1)
        kind = KUBECTL_KINDS.get(kind_name[0]) if len(kind_name) == 2 else "Pod"
        find(state, ns, kind, kind_name[-1])
        print(f"(log of {target})")
        return
    if verb == "port-forward":
        kind, name = positional[1].split("/", 1)
        service = find(state, ns, KUBECTL_KINDS[kind], name)
        local, _, remote = positional[2].partition(":")
        if int(remote) not in service.get("ports", []):
            fail(f"Service {name} does not have a service port {remote}")
        cluster(state)["port_forwards"][local] = {"namespace": ns, "service": name}
        return
    if verb == "create" and positional[1:2] == ["secret"]:
        kind, name = positional[2], positional[3]
        data = {}
        for literal in o.get("--from-literal", []):
            key, _, value = literal.partition("=")
            data[key] = base64.b64encode(value.encode()).decode()
        for spec in o.get("--from-file", []):
            key, _, path = spec.partition("=")
            value = sys.stdin.read() if path == "/dev/stdin" else open(existing_file(path, "file"), encoding="utf-8").read()
            if not value:
                fail(f"--from-file={spec}: the file is empty")
            data[key] = base64.b64encode(value.encode()).decode()
        if kind == "tls":
            existing_file(one(o, "--cert"), "certificate"), existing_file(one(o, "--key"), "key")
            data = {"tls.crt": "", "tls.key": ""}
        elif kind != "generic":
            fail(f"the kubectl stand-in does not create secret {kind}")
        objects = namespace(state, ns)
        if f"Secret/{name}" in objects:
            fail(f'error: failed to create secret secrets "{name}" already exists')
        objects[f"Secret/{name}"] = {"kind": "Secret", "data": data, "created": True}
        return
    if verb == "delete":
        kind = KUBECTL_KINDS.get(positional[1])
        find(state, ns, kind, positional[2])
        del namespace(state, ns)[f"{kind}/{positional[2]}"]
        return
    if verb == "describe":
        find(state, ns, KUBECTL_KINDS[positional[1]], positional[2])
        return
    fail(f"the kubectl stand-in does not know 'kubectl {' '.join(args)}'")


def validate(manifests):
    """kubeconform -strict against the Kubernetes 1.33 schemas and the chart tests' CRD schemas."""
    path = os.path.join(STATE_DIR, "validate.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump_all(manifests, f)
    result = subprocess.run([os.environ["REHEARSAL_KUBECONFORM"], "-strict", "-summary",
                             "-schema-location", os.path.join(os.environ["REHEARSAL_KUBERNETES_SCHEMAS"], "{{ .ResourceKind }}{{ .KindSuffix }}.json"),
                             "-schema-location", os.path.join(os.environ["REHEARSAL_CRD_SCHEMAS"], "{{ .Group }}", "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"),
                             path], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"kubeconform refuses what would be applied:\n{result.stdout}{result.stderr}")


# ---------------------------------------------------------------- helm

HELM_VALUE = {"--namespace", "-n", "--values", "-f", "--set", "--set-string", "--set-file", "--timeout", "--version", "--filter"}
HELM_FLAGS = {"--install", "--create-namespace", "--reuse-values", "--wait", "--logs", "--atomic"}
VALUE_FLAGS = ("--values", "--set", "--set-string", "--set-file")


def helm(state, args):
    positional, o = parse("helm", args, HELM_VALUE, HELM_FLAGS, (), {"-n": "--namespace", "-f": "--values"})
    verb = positional[0] if positional else ""
    if verb == "version":
        print('version.BuildInfo{Version:"v3.19"}')
        return
    if verb == "repo":
        repos = state.setdefault("helm_repos", {})
        if positional[1] == "add":
            repos[positional[2]] = positional[3]
        elif positional[1] != "update":
            fail(f"the helm stand-in does not know 'helm repo {positional[1]}'")
        return
    ns = one(o, "--namespace", False) or "default"
    c = cluster(state)
    if verb in ("upgrade", "install"):
        release, chart = positional[1], positional[2]
        exists = f"{ns}/{release}" in c["releases"]
        if verb == "upgrade" and not o.get("--install") and not exists:
            fail(f'Error: UPGRADE FAILED: "{release}" has no deployed releases')
        if o.get("--create-namespace"):
            c["namespaces"].setdefault(ns, {})
        namespace(state, ns)
        if "--reuse-values" in o and not exists:
            fail("--reuse-values on a release that does not exist")
        if "/" in chart and not os.path.isdir(chart):
            repo = chart.split("/")[0]
            if repo not in state.get("helm_repos", {}):
                fail(f'Error: repo {repo} not found')
            if not one(o, "--version", False):
                fail(f"{chart} without --version: an unpinned chart from a repository")
            for values in o.get("--values", []):
                existing_file(values, "values file")
            c["releases"][f"{ns}/{release}"] = {"chart": chart, "objects": []}
            return
        install_chart(state, c, ns, release, chart, o, exists)
        return
    if verb == "test":
        release = c["releases"].get(f"{ns}/{positional[1]}")
        if release is None:
            fail(f"Error: release: not found")
        wanted = [f.split("=", 1)[1] for f in o.get("--filter", []) if f.startswith("name=")]
        tests = release.get("tests", [])
        chosen = [t for t in tests if not wanted or t in wanted]
        if wanted and set(wanted) - set(tests):
            fail(f"the release has no test hook {', '.join(set(wanted) - set(tests))} (its tests: {', '.join(tests) or 'none'})")
        for name in chosen:
            check_images(state, c, release["test_images"][name])
            namespace(state, ns)[f"Job/{name}"] = {"kind": "Job"}
        print(f"NAME: {positional[1]}\nPhase: Succeeded")
        return
    if verb == "uninstall":
        key = f"{ns}/{positional[1]}"
        if key not in c["releases"]:
            fail(f"Error: uninstall: Release not loaded: {positional[1]}: release: not found")
        for obj in c["releases"][key]["objects"]:
            namespace(state, ns).pop(obj, None)
        del c["releases"][key]
        return
    fail(f"the helm stand-in does not know 'helm {' '.join(args)}'")


def value_arguments(o, args):
    """The values files and --set flags in the order given (helm applies them in that order)."""
    result, i = [], 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        name = {"-f": "--values"}.get(name, name)
        if name in VALUE_FLAGS:
            if not eq:
                i += 1
                value = args[i]
            if name == "--values":
                # The file as it was when the command ran: a guide may write it again later.
                value = snapshot(existing_file(value, "values file"))
            result += [name, value]
        i += 1
    return result


def snapshot(path):
    content = open(path, encoding="utf-8").read()
    copy = os.path.join(STATE_DIR, "values", hashlib.sha256(content.encode()).hexdigest()[:16] + "-" + os.path.basename(path))
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    with open(copy, "w", encoding="utf-8") as f:
        f.write(content)
    return copy


def render(values, ns, release):
    """The real helm template of a copy of the chart that also prints the values it computed."""
    chart = os.path.join(STATE_DIR, "chart")
    if not os.path.isdir(chart):
        subprocess.run(["cp", "-r", os.environ["REHEARSAL_CHART"], chart], check=True)
        with open(os.path.join(chart, "templates", "zz-rehearsal-values.yaml"), "w", encoding="utf-8") as f:
            f.write("# rehearsal-values: {{ toJson .Values }}\n")
    result = subprocess.run([os.environ["REHEARSAL_REAL_HELM"], "template", release, chart, "--namespace", ns, "--kube-version", "1.33.0", *values],
                            capture_output=True, text=True)
    if result.returncode != 0:
        fail(result.stderr.replace(chart, "charts/dronedelivery").strip())
    marker = re.search(r"^# rehearsal-values: (.*)$", result.stdout, re.M)
    manifests = [d for d in yaml.safe_load_all(result.stdout.replace(marker.group(0), "")) if d]
    return manifests, json.loads(marker.group(1))


def leaves(tree, prefix=()):
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, prefix + (key,))
    else:
        yield prefix, tree


def install_chart(state, c, ns, release, chart, o, exists):
    if os.path.realpath(chart) != os.path.realpath(os.environ["REHEARSAL_CHART"]):
        fail(f"the helm stand-in installs this repository's chart, not {chart}")
    key = f"{ns}/{release}"
    given = value_arguments(o, sys.argv[2:])
    values = (c["releases"][key]["values_arguments"] if exists and o.get("--reuse-values") else []) + given
    manifests, computed = render(values, ns, release)
    validate(manifests)

    # A setting an earlier install or upgrade made must survive a later one, unless a step overlay owns it.
    defaults = state.get("chart_defaults") or render([], ns, release)[1]
    state["chart_defaults"] = defaults
    if exists:
        owned = step_owned()
        before = dict(leaves(c["releases"][key]["computed"]))
        now = dict(leaves(computed))
        default = dict(leaves(defaults))
        lost = [".".join(path) for path, value in before.items()
                if path not in owned and value != default.get(path) and now.get(path) == default.get(path)]
        if lost:
            fail("this upgrade loses settings an earlier install made (they return to the chart's defaults): "
                 + ", ".join(sorted(lost)) + ". Keep them in the values file every upgrade passes.")

    check_otlp_endpoint(state, ns, computed)
    images = [container["image"] for m in manifests if m["kind"] in ("Deployment", "Job") and "test" not in hooks(m)
              for container in m["spec"]["template"]["spec"]["containers"]]
    check_images(state, c, images)
    objects = {}
    tests, test_images = [], {}
    for m in manifests:
        name = f"{m['kind']}/{m['metadata']['name']}"
        events = hooks(m)
        if "test" in events:
            tests.append(m["metadata"]["name"])
            test_images[m["metadata"]["name"]] = [x["image"] for x in m["spec"]["template"]["spec"]["containers"]]
            continue
        if events and "hook-succeeded" in m["metadata"].get("annotations", {}).get("helm.sh/hook-delete-policy", ""):
            continue  # a hook that deletes itself once it succeeded: gone after a --wait install
        obj = {"kind": m["kind"]}
        if m["kind"] == "Service":
            obj["ports"] = [p["port"] for p in m["spec"]["ports"]]
            obj["nodePorts"] = [p.get("nodePort") for p in m["spec"]["ports"] if p.get("nodePort")]
        if m["kind"] == "Secret":
            data = {k: base64.b64encode(str(v).encode()).decode() for k, v in (m.get("stringData") or {}).items()}
            data.update(m.get("data") or {})
            obj["data"] = data
        if m["kind"] == "Ingress":
            obj["hosts"] = [r.get("host") for r in m["spec"]["rules"]]
        objects[name] = obj
    for old in c["releases"].get(key, {}).get("objects", []):
        namespace(state, ns).pop(old, None)
    namespace(state, ns).update(objects)
    c["releases"][key] = {"chart": chart, "values_arguments": values, "computed": computed, "objects": list(objects), "tests": tests, "test_images": test_images}


def check_otlp_endpoint(state, ns, computed):
    """An OTLP endpoint at a Service of the cluster (<service>, <service>.<namespace>, <service>.<namespace>.svc...) names one that exists, on a port it has."""
    endpoint = (computed.get("telemetry") or {}).get("otlpEndpoint")
    if not endpoint:
        return
    m = re.fullmatch(r"https?://([^/:]+)(?::(\d+))?/?", endpoint)
    if not m:
        fail(f"telemetry.otlpEndpoint {endpoint} is not a URL of a host and port")
    labels = m.group(1).lower().split(".")
    if len(labels) > 2 and labels[2] != "svc":
        return  # outside the cluster
    service, where = labels[0], labels[1] if len(labels) > 1 else ns
    port = int(m.group(2) or (443 if endpoint.startswith("https") else 80))
    obj = namespace(state, where).get(f"Service/{service}")
    if obj is None:
        fail(f"telemetry.otlpEndpoint {endpoint}: there is no Service {service} in namespace {where}; the services' telemetry would go nowhere")
    if port not in obj.get("ports", []):
        fail(f"telemetry.otlpEndpoint {endpoint}: Service {service} has no port {port} (its ports: {obj.get('ports')})")


def hooks(manifest):
    return [h.strip() for h in (manifest["metadata"].get("annotations") or {}).get("helm.sh/hook", "").split(",") if h.strip()]


def step_owned():
    """The value paths some step overlay sets: a later step replaces an earlier one's by design."""
    steps = os.path.join(os.environ["REHEARSAL_CHART"], "steps")
    return {path for step in os.listdir(steps) for path, _ in leaves(yaml.safe_load(open(os.path.join(steps, step), encoding="utf-8")) or {})}


def check_images(state, c, images, runner="the chart"):
    """Every image of ours the render (or a manifest) runs was built for this cluster earlier in the guide (same name, same tag)."""
    available = c["images"] if c["kind"] == "kind" else state.get("azure", {}).get("images", [])
    for image in images:
        if "/dronedelivery/" in "/" + image and image not in available:
            fail(f"{runner} runs {image}, which the guide never built {'into this kind cluster' if c['kind'] == 'kind' else 'in the registry'} "
                 f"(built: {', '.join(available) or 'nothing'})")


# ---------------------------------------------------------------- kind, docker

def kind(state, args):
    positional, o = parse("kind", args, {"--config", "--name"}, set())
    command = " ".join(positional[:2])
    if command == "create cluster":
        config = yaml.safe_load(open(existing_file(one(o, "--config"), "cluster config"), encoding="utf-8"))
        name = one(o, "--name", False) or config.get("name", "kind")
        if state.get("cluster", {}).get("name") == name:
            fail(f'ERROR: failed to create cluster: node(s) already exist for a cluster with the name "{name}"')
        ports = {str(m["hostPort"]): m["containerPort"] for n in config["nodes"] for m in n.get("extraPortMappings", [])}
        state["cluster"] = new_cluster("kind", name, ports)
    elif command == "load image-archive":
        archive = positional[2]
        c = cluster(state)
        if one(o, "--name", False) != c["name"]:
            fail(f"ERROR: no nodes found for cluster \"{one(o, '--name', False)}\"")
        image = state.get("archives", {}).get(os.path.realpath(archive))
        if image is None:
            fail(f"{archive} is not an image archive docker save wrote")
        c["images"].append(image)
    elif command == "delete cluster":
        if state.get("cluster", {}).get("name") != one(o, "--name"):
            fail(f"no cluster named {one(o, '--name')}")
        del state["cluster"]
    elif positional == ["version"]:
        print("kind v0.29.0 go1.24.2 linux/amd64")
    else:
        fail(f"the kind stand-in does not know 'kind {' '.join(args)}'")


def docker(state, args):
    if args[:2] == ["buildx", "version"] or args[:1] == ["info"]:
        return
    positional, o = parse("docker", args, {"-f", "--file", "--build-arg", "-t", "--tag", "-o", "--output", "--provenance", "--sbom"}, {"--load"},
                          (), {"--file": "-f", "--tag": "-t", "--output": "-o"})
    if positional[:2] == ["buildx", "build"] or positional[:1] == ["build"]:
        if positional[0] == "buildx" and (one(o, "--provenance", False) != "false" or one(o, "--sbom", False) != "false" or not o.get("--load")):
            fail("docker buildx build without --load --provenance=false --sbom=false: kind cannot import what docker save writes then")
        dockerfile(one(o, "-f"), o.get("--build-arg", []))
        state.setdefault("local_images", []).append(one(o, "-t"))
    elif positional[:1] == ["save"]:
        image = positional[1]
        if image not in state.get("local_images", []):
            fail(f"Error response from daemon: reference does not exist: {image}")
        archive = one(o, "-o")
        with open(archive, "w", encoding="utf-8") as f:
            f.write(image)
        state.setdefault("archives", {})[os.path.realpath(archive)] = image
    else:
        fail(f"the docker stand-in does not know 'docker {' '.join(args)}'")


# ---------------------------------------------------------------- curl

def curl(state, args):
    # -s, -S, -f and -L (alone or together, e.g. -fsS) change nothing the rehearsal answers.
    args = [a for a in args if not re.fullmatch(r"-[sSfL]+", a)]
    positional, o = parse("curl", args, {"-H", "--header", "-d", "--data", "--data-urlencode", "-X", "-o", "-w"}, set(),
                          (), {"--header": "-H", "--data": "-d"})
    if len(positional) != 1:
        fail(f"curl with {len(positional)} URLs")
    url = positional[0]
    m = re.fullmatch(r"(https?)://([^/:]+)(?::(\d+))?(/[^?]*)?(\?.*)?", url)
    if not m:
        fail(f"curl: not a URL: {url}")
    host, port, path = m.group(2), m.group(3), m.group(4) or "/"
    if host == "login.microsoftonline.com":
        token_request(state, path, o)
        return
    check_reachable(state, m.group(1), host, port)
    headers = o.get("-H", [])
    if path == "/health/ready":
        print("Healthy")
    elif path.startswith("/api/invoices/"):
        auth = [h for h in headers if h.lower().startswith("authorization: bearer ")]
        if not auth or not auth[0].split(" ", 2)[2].strip():
            fail("the API answers 401 without a bearer token")
        print(json.dumps({"ownerId": path.rsplit("/", 1)[1], "deliveries": []}))
    else:
        fail(f"the curl stand-in does not know {url}")


def check_reachable(state, scheme, host, port):
    c = cluster(state)
    port = port or ("443" if scheme == "https" else "80")
    if host == "127.0.0.1":
        if port in c["port_forwards"]:
            return
        container = c["host_ports"].get(port)
        if container is not None and any(container in obj.get("nodePorts", []) for ns in c["namespaces"].values() for obj in ns.values()):
            return
        fail(f"curl: (7) Failed to connect to 127.0.0.1 port {port}: nothing forwards it into the cluster")
    ingresses = [obj for ns in c["namespaces"].values() for obj in ns.values() if obj["kind"] == "Ingress"]
    if not any(host in i["hosts"] for i in ingresses):
        fail(f"curl: no Ingress of the cluster serves the host {host} (hosts: {[h for i in ingresses for h in i['hosts']]})")
    ip = c["namespaces"]["app-routing-system"]["Service/nginx"]["ip"]
    if not host.startswith(ip + "."):
        fail(f"curl: (6) Could not resolve host: {host} (the ingress controller's IP is {ip}; <ip>.nip.io resolves to it)")


def token_request(state, path, o):
    m = re.fullmatch(r"/([\w-]+)/oauth2/v2\.0/token", path)
    if not m:
        fail(f"the curl stand-in knows Entra ID's v2.0 token endpoint, not {path}")
    form = {}
    for field in o.get("--data-urlencode", []) + o.get("-d", []):
        name, _, value = field.partition("=")
        if "=" not in field and "@" in field:
            name, _, source = field.partition("@")
            value = sys.stdin.read() if source == "-" else open(existing_file(source, "file"), encoding="utf-8").read()
        form[name] = value
    apps = state.get("azure", {}).get("apps", {})
    client = apps.get(form.get("client_id"))
    if form.get("grant_type") != "client_credentials" or client is None:
        fail(f"AADSTS700016: the token request names no registered client app (client_id {form.get('client_id')!r})")
    if form.get("client_secret") != client.get("secret"):
        fail("AADSTS7000215: Invalid client secret provided.")
    scope = form.get("scope", "")
    api = next((a for a in apps.values() if any(scope == f"{uri}/.default" for uri in a["identifierUris"])), None)
    if api is None:
        fail(f"AADSTS500011: The resource principal named {scope.removesuffix('/.default')} was not found in the tenant")
    if not client.get("consented"):
        fail("the token carries no roles: the client app's application permissions were never granted admin consent")
    if api.get("tokenVersion") != "2":
        fail("the API's app registration issues v1 access tokens (aud api://..., iss sts.windows.net): the services expect v2 (--requested-access-token-version 2)")
    print(json.dumps({"token_type": "Bearer", "expires_in": 3599, "access_token": "eyJ.rehearsal." + guid("token", form["client_id"])}))


# ---------------------------------------------------------------- dotnet

def dotnet(state, args):
    positional, o = parse("dotnet", args, {"-c", "--configuration", "--project"}, {"--no-build"}, (), {"--configuration": "-c"})
    if positional[:1] != ["run"]:
        fail(f"the dotnet stand-in knows 'dotnet run', not 'dotnet {' '.join(args)}'")
    project = one(o, "--project")
    if not os.path.isdir(project) or not any(f.endswith(".csproj") for f in os.listdir(project)):
        fail(f"Couldn't find a project to run. Ensure a project exists in {project}")
    program = positional[positional.index("--") + 1:] if "--" in positional else []
    state.setdefault("dotnet_runs", []).append({"project": os.path.normpath(project), "arguments": program, "cwd": os.getcwd()})
    if os.path.normpath(project) == os.path.join("src", "Tools", "LoadDriver"):
        if program[:1] == ["token"]:
            # The real load driver mints the token: a wrong key file or option fails here as it would there.
            result = subprocess.run([os.environ["REHEARSAL_REAL_DOTNET"], os.environ["REHEARSAL_LOADDRIVER"], *program], capture_output=True, text=True)
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
            if result.returncode != 0:
                fail("the load driver refused the token command")
        elif "--token-scope" in program:
            missing = [n for n in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET") if not os.environ.get(n)]
            if missing:
                fail(f"--token-scope needs the client app's credentials in the environment; {', '.join(missing)} not exported")


TOOLS = {"az": az, "kubectl": kubectl, "helm": helm, "kind": kind, "docker": docker, "curl": curl, "dotnet": dotnet}


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    with open(os.path.join(STATE_DIR, "state.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(LOG_FILE, "a", encoding="utf-8") as log:
            log.write(f"{tool} {shlex.join(args)}\n")
        state = load_state()
        try:
            TOOLS[tool](state, args)
        except Refused as refused:
            save_state(state)
            print(f"{tool} (rehearsal): {refused}", file=sys.stderr)
            sys.exit(1)
        save_state(state)


if __name__ == "__main__":
    main()
