using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>A link's address that the framework's URI parser chokes on is a plain path, never an internal error.</summary>
public sealed class AddressTests
{
    [Theory]
    // Found by the generated hostile connections: Uri.TryCreate throws IndexOutOfRangeException on it.
    [InlineData("//\u202e", "\u202e")]
    [InlineData("sb://namespace/orders", "orders")]
    [InlineData("orders/$management", "orders/$management")]
    public void An_address_becomes_an_entity_path_without_throwing(string address, string path)
    {
        Assert.Equal(path, CbsNode.PathOf(address));
    }
}
