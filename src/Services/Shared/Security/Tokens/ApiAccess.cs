namespace DroneDelivery.Security.Tokens;

/// <summary>
/// The access contract of the public APIs: the claims a bearer token carries and the scopes and roles
/// each operation needs. Scopes are delegated permissions (a user acting on their own deliveries and
/// invoices, claim <c>scp</c>); roles are application permissions (a back-office or partner application
/// acting for every owner, claim <c>roles</c>) — the two kinds Microsoft Entra ID issues.
/// </summary>
public static class ApiAccess
{
    /// <summary>The token's subject: the caller, and the partition of the per-caller rate limit.</summary>
    public const string SubjectClaim = "sub";

    /// <summary>Default name of the claim holding the owner id the caller acts as (<c>Authentication:OwnerClaim</c>).</summary>
    public const string OwnerClaim = "owner";

    /// <summary>Delegated permissions, space-separated, as Microsoft Entra ID writes them.</summary>
    public const string ScopeClaim = "scp";

    /// <summary>Delegated permissions as RFC 9068 (JWT access tokens) names the claim; read like <see cref="ScopeClaim"/>.</summary>
    public const string ScopeClaimRfc9068 = "scope";

    /// <summary>Application permissions (app roles), one claim value per role.</summary>
    public const string RolesClaim = "roles";

    /// <summary>Delegated permissions: the caller acts on what its owner id owns.</summary>
    public static class Scopes
    {
        /// <summary>Read the caller's own invoices.</summary>
        public const string InvoicesRead = "invoices.read";

        /// <summary>Read the status of the caller's own deliveries.</summary>
        public const string DeliveriesRead = "deliveries.read";

        /// <summary>Request, cancel and reschedule the caller's own deliveries.</summary>
        public const string DeliveriesWrite = "deliveries.write";

        public static IReadOnlyList<string> All { get; } = [InvoicesRead, DeliveriesRead, DeliveriesWrite];
    }

    /// <summary>Application permissions: the caller acts for every owner.</summary>
    public static class Roles
    {
        /// <summary>Read any owner's invoices (billing, back office).</summary>
        public const string InvoicesReadAll = "Invoices.ReadAll";

        /// <summary>Read the status of any delivery.</summary>
        public const string DeliveriesReadAll = "Deliveries.ReadAll";

        /// <summary>Request, cancel and reschedule deliveries for any owner (a partner integration).</summary>
        public const string DeliveriesWriteAll = "Deliveries.WriteAll";

        public static IReadOnlyList<string> All { get; } = [InvoicesReadAll, DeliveriesReadAll, DeliveriesWriteAll];
    }
}
