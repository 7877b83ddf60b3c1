# -*- coding: utf-8 -*-
'''bluetoothd stand-in for the clicker's tier-2 tests.

python-dbusmock's stock bluez5 template (Adapter1, Device1, AgentManager1) plus what the
clicker needs and the stock template lacks:

- org.bluez.LEAdvertisingManager1 on every adapter. RegisterAdvertisement behaves like
  bluetoothd: before replying it calls GetAll(org.bluez.LEAdvertisement1) on the caller's
  object and records the properties; NotPermitted when all instances are in use,
  InvalidLength when the data does not fit, DoesNotExist on a bad UnregisterAdvertisement.
  Once registered, it follows the advertisement's PropertiesChanged like bluetoothd 5.66
  (src/advertising.c: a property watch that parses the value from the signal and refreshes the
  instance) and records every ManufacturerData it applied (GetAdvertisementHistory).
  After registering and after each change it applied it writes the chosen TX power back to the
  advertisement (Properties.Set TxPower, result ignored), as 5.66 does after every refresh on a
  kernel with the extended advertising MGMT commands (-p '{"tx_power_write_back": false}' to stop).
  Refreshes are immediate, or take refresh_delay_ms each, one at a time (-p '{"refresh_delay_ms": 250}').
  Extended data (SecondaryChannel set) fits only with -p '{"ext_ad_len": 251}' (BlueZ >= 5.69), up to
  238 bytes of manufacturer data as with bluetoothd 5.82 on Linux 6.12;
  without it every advertisement is capped like legacy, as BlueZ 5.66's 31-byte bt_ad is.
  -p '{"legacy_controller": true}' stands for a Bluetooth 4 controller (legacy advertising only): no
  SupportedSecondaryChannels, and a broadcast registered while the adapter discovers fails as the
  kernel makes it fail (it needs a new random address, which the controller refuses during a scan:
  "Failed to register advertisement", seen with bluetoothd 5.66 in the QEMU guest).
- org.bluez.GattManager1 on every adapter. RegisterApplication calls GetManagedObjects on the
  caller's application before replying and records the tree; AlreadyExists for a path registered
  already. SetRegisterApplicationFailures makes the next N registrations fail, optionally after
  registering (bluetoothd took it, but its answer said otherwise or never reached the caller).
- SetRegisterAdvertisementDelay: RegisterAdvertisement is carried out (and answered) only after a
  delay, as by a bluetoothd on a loaded host. An UnregisterAdvertisement of a registration still
  being carried out is what crashes bluetoothd 5.82 (`add_adv_params_callback` on the freed
  advertisement): the stand-in counts it (GetWithdrawnInFlight) and then refuses the registration.
- Device GATT objects (GattService1 / GattCharacteristic1 with ReadValue), Connect that
  resolves services after a delay (or never), and helpers to push advertisement data.

Run: /usr/bin/python3 -m dbusmock --template clicker_bluez5.py [-p '{"experimental": true}']
(with DBUS_SYSTEM_BUS_ADDRESS pointing at a private bus). Control it through the
org.bluez.Mock interface on "/".
'''

import dbus
import dbus.service
from gi.repository import GLib

from dbusmock import OBJECT_MANAGER_IFACE, mockobject
from dbusmock.templates import bluez5 as stock
from dbusmock.templates.bluez5 import (  # noqa: F401  (re-exported: the loader scans module symbols)
    RegisterAgent, RequestDefaultAgent, UnregisterAgent, RemoveAdapter, RemoveAdapterWithDevices,
    PairDevice, BlockDevice, ConnectDevice, DisconnectDevice,
)

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

MOCK_IFACE = 'org.bluez.Mock'
ADAPTER_IFACE = 'org.bluez.Adapter1'
DEVICE_IFACE = 'org.bluez.Device1'
ADV_MANAGER_IFACE = 'org.bluez.LEAdvertisingManager1'
ADV_IFACE = 'org.bluez.LEAdvertisement1'
GATT_MANAGER_IFACE = 'org.bluez.GattManager1'
GATT_SERVICE_IFACE = 'org.bluez.GattService1'
GATT_CHAR_IFACE = 'org.bluez.GattCharacteristic1'
PROPS_IFACE = 'org.freedesktop.DBus.Properties'

# Legacy advertising data is 31 bytes; flags take 3, the manufacturer AD header 4 (len, type, company).
MAX_MANUFACTURER_DATA = 31 - 3 - 4

_params = {}


def _error(name, text):
    return dbus.exceptions.DBusException(text, name='org.bluez.Error.' + name)


def _emit_props_changed(obj, iface, changed):
    obj.EmitSignal(PROPS_IFACE, 'PropertiesChanged', 'sa{sv}as', [iface, changed, dbus.Array([], signature='s')])


def _set_props(obj, iface, changed):
    '''Update stored properties and emit PropertiesChanged (dbusmock 0.28.7's UpdateProperties
    cannot carry dictionary values such as ManufacturerData).'''
    for k, v in changed.items():
        obj.props.setdefault(iface, {})[k] = v
    _emit_props_changed(obj, iface, changed)


def _install(obj, iface, name, fn):
    '''Put a dbus-python method (with sender/async keywords) into a mock object's dispatch table.'''
    obj.methods.setdefault(iface, {})[name] = (fn._dbus_in_signature, fn._dbus_out_signature, '', fn)


# ---------------------------------------------------------------- advertising manager

def _update_instances(adapter):
    '''Like bluetoothd: ActiveInstances in use, SupportedInstances still available.'''
    active = len(adapter.advertisements)
    _set_props(adapter, ADV_MANAGER_IFACE, {
        'ActiveInstances': dbus.Byte(active, variant_level=1),
        'SupportedInstances': dbus.Byte(max(0, adapter.max_instances - active), variant_level=1),
    })


@dbus.service.method(ADV_MANAGER_IFACE, in_signature='oa{sv}', out_signature='',
                     sender_keyword='sender', async_callbacks=('ok', 'err'))
def RegisterAdvertisement(adapter, path, options, sender=None, ok=None, err=None):
    adapter.log(f'RegisterAdvertisement {sender} {path}')
    adapter.call_log.append((0, 'RegisterAdvertisement', [path]))
    key = (str(sender), str(path))
    if key in adapter.advertisements or key in adapter.pending_advertisements:
        err(_error('AlreadyExists', 'Advertisement already registered'))
        return
    if adapter.register_delay_ms > 0:
        token = object()
        adapter.pending_advertisements[key] = token

        def carry_out():
            if adapter.pending_advertisements.get(key) is not token:   # withdrawn meanwhile (counted there)
                err(_error('Failed', 'Advertisement withdrawn while it was being registered'))
                return False
            del adapter.pending_advertisements[key]
            _register_advertisement(adapter, key, path, ok, err)
            return False
        GLib.timeout_add(adapter.register_delay_ms, carry_out)
        return
    _register_advertisement(adapter, key, path, ok, err)


def _register_advertisement(adapter, key, path, ok, err):
    sender = key[0]
    if adapter.forced_register_error:
        name, text = adapter.forced_register_error
        err(_error(name, text))
        return
    if len(adapter.advertisements) >= adapter.max_instances:
        err(_error('NotPermitted', 'Maximum advertisements reached'))
        return

    def got_props(props):
        kind = str(props.get('Type', ''))
        if kind not in ('broadcast', 'peripheral'):
            err(_error('InvalidArguments', 'Invalid Type'))
            return
        if _params.get('legacy_controller', False) and kind == 'broadcast' \
                and adapter.props[ADAPTER_IFACE]['Discovering']:
            err(_error('Failed', 'Failed to register advertisement'))
            return
        secondary = props.get('SecondaryChannel')
        if secondary is not None:
            supported = [str(c) for c in adapter.props[ADV_MANAGER_IFACE].get('SupportedSecondaryChannels', [])]
            if str(secondary) not in supported:
                err(_error('Failed', 'Failed to parse advertisement.'))
                return
        limit = _manufacturer_limit(secondary is not None)
        for _company, value in dict(props.get('ManufacturerData', {})).items():
            if len(value) > limit:
                err(_error('InvalidLength', 'Advertising data too long'))
                return
        adapter.advertisements[key] = props
        adapter.adv_history[key] = [_manufacturer_entries(props)]
        adapter.registered_data.extend(bytes(v) for v in dict(props.get('ManufacturerData', {})).values())
        adapter.adv_watches[key] = adapter.connection.add_signal_receiver(
            lambda iface, changed, invalidated: _advertisement_changed(adapter, key, iface, changed),
            signal_name='PropertiesChanged', dbus_interface=PROPS_IFACE, bus_name=key[0], path=key[1])
        _update_instances(adapter)
        ok()
        _write_back_tx_power(adapter, key)

    def failed(e):
        err(_error('Failed', f'Failed to read advertisement properties: {e}'))

    adapter.connection.call_async(sender, path, PROPS_IFACE, 'GetAll', 's', (ADV_IFACE,),
                                  got_props, failed, timeout=10)


def _manufacturer_limit(extended):
    if extended:
        # As bluetoothd 5.82 on Linux 6.12 (the Debian 13 guest): its own Flags AD (3) in the data, room kept
        # by the kernel for the Flags and TX power it may add (3 + 3), and the AD header (4): with
        # MaxAdvLen 251, 238 bytes are taken and 241 refused.
        return int(_params.get('ext_ad_len', 31)) - 3 - 3 - 3 - 4
    return MAX_MANUFACTURER_DATA


def _manufacturer_entries(props):
    return dbus.Array([dbus.Struct((dbus.UInt16(c), dbus.Array(v, signature='y')))
                       for c, v in dict(props.get('ManufacturerData', {})).items()], signature='(qay)')


def _write_back_tx_power(adapter, key):
    if not _params.get('tx_power_write_back', True):
        return
    adapter.tx_power_writes = getattr(adapter, 'tx_power_writes', 0) + 1
    adapter.connection.call_async(key[0], key[1], PROPS_IFACE, 'Set', 'ssv',
                                  (ADV_IFACE, 'TxPower', dbus.Int16(7, variant_level=1)),
                                  lambda *a: None, lambda *a: None, timeout=10)


def _advertisement_changed(adapter, key, iface, changed):
    '''bluetoothd's property watch: applies the changed value taken from the signal (each changed
    property refreshes the instance, and every refresh writes TxPower back).'''
    if str(iface) != ADV_IFACE or key not in adapter.advertisements:
        return
    props = adapter.advertisements[key]
    for name, value in changed.items():
        props[name] = value
        # Each interval property refreshes the instance on its own; a refresh with MinInterval > MaxInterval
        # is refused by the kernel, which bluetoothd 5.66 answers by aborting (GetRefreshErrors counts them).
        if name in ('MinInterval', 'MaxInterval') and 'MinInterval' in props and 'MaxInterval' in props \
                and int(props['MinInterval']) > int(props['MaxInterval']):
            adapter.refresh_errors = getattr(adapter, 'refresh_errors', 0) + 1
    for name, value in changed.items():
        def refreshed(name=name, value=value):
            if key not in adapter.advertisements:
                return
            if name == 'ManufacturerData':
                adapter.adv_history[key].append(_manufacturer_entries({name: value}))
            _write_back_tx_power(adapter, key)
        _refresh(adapter, refreshed)


def _refresh(adapter, done):
    '''One refresh of an advertising instance. With -p '{"refresh_delay_ms": N}' each takes N ms and they run
    one at a time, as bluetoothd sends management commands one at a time and each waits for the kernel and
    the controller (a loaded host, the QEMU guests): changes that come faster queue. GetMaxRefreshQueue
    tells how deep the queue got.'''
    delay = int(_params.get('refresh_delay_ms', 0))
    if delay <= 0:
        done()
        return
    queue = adapter.__dict__.setdefault('refresh_queue', [])
    queue.append(done)
    adapter.max_refresh_queue = max(getattr(adapter, 'max_refresh_queue', 0), len(queue))

    def run():
        queue.pop(0)()
        if queue:
            GLib.timeout_add(delay, run)
        return False
    if len(queue) == 1:
        GLib.timeout_add(delay, run)


def _forget_advertisement(adapter, key):
    del adapter.advertisements[key]
    watch = adapter.adv_watches.pop(key, None)
    if watch is not None:
        watch.remove()


@dbus.service.method(ADV_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
def UnregisterAdvertisement(adapter, path, sender=None):
    adapter.call_log.append((0, 'UnregisterAdvertisement', [path]))
    key = (str(sender), str(path))
    if key in adapter.pending_advertisements:
        del adapter.pending_advertisements[key]
        adapter.withdrawn_in_flight += 1
        return
    if key not in adapter.advertisements:
        raise _error('DoesNotExist', 'Advertisement not registered')
    _forget_advertisement(adapter, key)
    _update_instances(adapter)


# ---------------------------------------------------------------- GATT manager

@dbus.service.method(GATT_MANAGER_IFACE, in_signature='oa{sv}', out_signature='',
                     sender_keyword='sender', async_callbacks=('ok', 'err'))
def RegisterApplication(adapter, path, options, sender=None, ok=None, err=None):
    adapter.call_log.append((0, 'RegisterApplication', [path]))
    key = (str(sender), str(path))
    if key in adapter.applications:
        err(_error('AlreadyExists', 'Application already registered'))
        return

    def got_objects(objects):
        services = {p: i[GATT_SERVICE_IFACE] for p, i in objects.items() if GATT_SERVICE_IFACE in i}
        chars = {p: i[GATT_CHAR_IFACE] for p, i in objects.items() if GATT_CHAR_IFACE in i}
        if not services:
            err(_error('Failed', 'No object received'))
            return
        for cpath, props in chars.items():
            if str(props.get('Service', '')) not in services:
                err(_error('Failed', f'Characteristic {cpath} has no service'))
                return
            if 'UUID' not in props or 'Flags' not in props:
                err(_error('Failed', f'Characteristic {cpath} lacks UUID or Flags'))
                return
        failures = getattr(adapter, 'forced_app_failures', None)
        if failures and failures[1] > 0:
            name, count, register_anyway = failures
            adapter.forced_app_failures = (name, count - 1, register_anyway)
            if register_anyway:
                adapter.applications[key] = objects
            err(_error(name, 'Forced by test'))
            return
        adapter.applications[key] = objects
        ok()

    def failed(e):
        err(_error('Failed', f'Failed to read application objects: {e}'))

    adapter.connection.call_async(sender, path, OBJECT_MANAGER_IFACE, 'GetManagedObjects', '', (),
                                  got_objects, failed, timeout=10)


@dbus.service.method(GATT_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
def UnregisterApplication(adapter, path, sender=None):
    adapter.call_log.append((0, 'UnregisterApplication', [path]))
    key = (str(sender), str(path))
    if key not in adapter.applications:
        raise _error('DoesNotExist', 'Application not registered')
    del adapter.applications[key]


# ---------------------------------------------------------------- device GATT client side

@dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='', async_callbacks=('ok', 'err'))
def Connect(device, ok=None, err=None):
    device.call_log.append((0, 'Connect', []))
    if device.connect_behaviour == 'fail':
        err(_error('Failed', 'le-connection-abort-by-local'))
        return
    if device.connect_behaviour == 'hang':
        return  # never replies: the caller's timeout must fire
    if device.connect_behaviour != 'silent':
        _set_props(device, DEVICE_IFACE, {'Connected': dbus.Boolean(True, variant_level=1)})
    device.connected = True
    ok()

    def resolve():
        if device.connected and device.connect_behaviour != 'unresolved':
            _set_props(device, DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(True, variant_level=1)})
        return False
    GLib.timeout_add(device.resolve_delay_ms, resolve)


@dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='')
def Disconnect(device):
    device.call_log.append((0, 'Disconnect', []))
    device.connected = False
    _set_props(device, DEVICE_IFACE, {
        'ServicesResolved': dbus.Boolean(False, variant_level=1),
        'Connected': dbus.Boolean(False, variant_level=1),
    })


@dbus.service.method(GATT_CHAR_IFACE, in_signature='a{sv}', out_signature='ay')
def ReadValue(char, options):
    char.call_log.append((0, 'ReadValue', []))
    device = mockobject.objects[char.device_path]
    if not device.connected:
        raise _error('Failed', 'Not connected')
    if getattr(device, 'read_error', None):
        raise _error(device.read_error, 'Forced by test')
    return dbus.Array(char.props[GATT_CHAR_IFACE]['Value'], signature='y')


# ---------------------------------------------------------------- control interface (org.bluez.Mock)

@dbus.service.method(MOCK_IFACE, in_signature='ss', out_signature='s')
def AddAdapter(self, device_name, system_name):
    '''Stock AddAdapter plus LEAdvertisingManager1 and GattManager1.'''
    path = stock.AddAdapter(self, device_name, system_name)
    adapter = mockobject.objects[path]
    adv_props = {
        'ActiveInstances': dbus.Byte(0, variant_level=1),
        'SupportedInstances': dbus.Byte(int(_params.get('instances', 4)), variant_level=1),
        'SupportedIncludes': dbus.Array(['tx-power', 'appearance', 'local-name'], signature='s', variant_level=1),
    }
    if not _params.get('legacy_controller', False):
        adv_props['SupportedSecondaryChannels'] = dbus.Array(['1M', '2M', 'Coded'], signature='s', variant_level=1)
    if _params.get('experimental', False):
        adv_props['SupportedFeatures'] = dbus.Array(['CanSetTxPower', 'HardwareOffload'], signature='s',
                                                    variant_level=1)
        adv_props['SupportedCapabilities'] = dbus.Dictionary({
            'MaxAdvLen': dbus.Byte(int(_params.get('ext_ad_len', 251)), variant_level=1),
            'MaxScnRspLen': dbus.Byte(251, variant_level=1),
            'MinTxPower': dbus.Int16(-34, variant_level=1),
            'MaxTxPower': dbus.Int16(7, variant_level=1),
        }, signature='sv', variant_level=1)
    adapter.AddProperties(ADV_MANAGER_IFACE, adv_props)
    adapter.props[GATT_MANAGER_IFACE] = {}  # no properties, but listed (AddProperties ignores an empty dict)
    adapter.max_instances = int(_params.get('instances', 4))
    adapter.advertisements = {}
    adapter.adv_history = {}
    adapter.registered_data = []
    adapter.adv_watches = {}
    adapter.applications = {}
    adapter.forced_register_error = None
    adapter.register_delay_ms = 0
    adapter.pending_advertisements = {}
    adapter.withdrawn_in_flight = 0
    _install(adapter, ADV_MANAGER_IFACE, 'RegisterAdvertisement', RegisterAdvertisement)
    _install(adapter, ADV_MANAGER_IFACE, 'UnregisterAdvertisement', UnregisterAdvertisement)
    _install(adapter, GATT_MANAGER_IFACE, 'RegisterApplication', RegisterApplication)
    _install(adapter, GATT_MANAGER_IFACE, 'UnregisterApplication', UnregisterApplication)
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}', [
        dbus.ObjectPath(path), {ADV_MANAGER_IFACE: adv_props, GATT_MANAGER_IFACE: {}}])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='sss', out_signature='s')
def AddDevice(self, adapter_device_name, device_address, alias):
    '''Stock AddDevice, with a Connect that resolves services and a working Disconnect.'''
    path = stock.AddDevice(self, adapter_device_name, device_address, alias)
    device = mockobject.objects[path]
    device.connect_behaviour = 'ok'
    device.resolve_delay_ms = 50
    device.gatt_handle = 0
    _install(device, DEVICE_IFACE, 'Connect', Connect)
    _install(device, DEVICE_IFACE, 'Disconnect', Disconnect)
    return path


def _device(adapter_device_name, address):
    path = f"/org/bluez/{adapter_device_name}/dev_{address.replace(':', '_').upper()}"
    if path not in mockobject.objects:
        raise dbus.exceptions.DBusException(f'Device {path} does not exist.', name=MOCK_IFACE + '.NoSuchDevice')
    return path, mockobject.objects[path]


def _adapter(adapter_device_name):
    path = '/org/bluez/' + adapter_device_name
    if path not in mockobject.objects:
        raise dbus.exceptions.DBusException(f'Adapter {adapter_device_name} does not exist.',
                                            name=MOCK_IFACE + '.NoSuchAdapter')
    return mockobject.objects[path]


@dbus.service.method(MOCK_IFACE, in_signature='ssqayn', out_signature='')
def SetManufacturerData(_self, adapter_device_name, address, company, data, rssi):
    '''Pushes an advertisement: sets ManufacturerData {company: data} and RSSI, emits PropertiesChanged.'''
    _path, device = _device(adapter_device_name, address)
    _set_props(device, DEVICE_IFACE, {
        'ManufacturerData': dbus.Dictionary({dbus.UInt16(company): dbus.Array(data, signature='y', variant_level=1)},
                                            signature='qv', variant_level=1),
        'RSSI': dbus.Int16(rssi, variant_level=1),
    })


@dbus.service.method(MOCK_IFACE, in_signature='sb', out_signature='')
def SetAdapterPowered(_self, adapter_device_name, powered):
    _set_props(_adapter(adapter_device_name), ADAPTER_IFACE, {'Powered': dbus.Boolean(powered, variant_level=1)})


@dbus.service.method(MOCK_IFACE, in_signature='sssu', out_signature='')
def SetConnectBehaviour(_self, adapter_device_name, address, behaviour, resolve_delay_ms):
    '''behaviour: "ok", "fail" (Connect errors), "hang" (Connect never replies),
    "unresolved" (connects, ServicesResolved never turns true), "silent" (connects and resolves the
    services, but Connected never turns true: seen with bluetoothd 5.66 in the QEMU guest).'''
    _path, device = _device(adapter_device_name, address)
    device.connect_behaviour = str(behaviour)
    device.resolve_delay_ms = int(resolve_delay_ms)


@dbus.service.method(MOCK_IFACE, in_signature='ssbb', out_signature='')
def SetDeviceConnection(_self, adapter_device_name, address, connected, resolved):
    '''Emits the device's Connected and ServicesResolved as bluetoothd does when a link comes up or drops.'''
    _path, device = _device(adapter_device_name, address)
    device.connected = bool(connected)
    _set_props(device, DEVICE_IFACE, {
        'Connected': dbus.Boolean(connected, variant_level=1),
        'ServicesResolved': dbus.Boolean(resolved, variant_level=1),
    })


@dbus.service.method(MOCK_IFACE, in_signature='sss', out_signature='')
def SetReadError(_self, adapter_device_name, address, error_name):
    '''Makes ReadValue on the device's characteristics fail with org.bluez.Error.<error_name> ("" to stop).'''
    _path, device = _device(adapter_device_name, address)
    device.read_error = str(error_name) or None


@dbus.service.method(MOCK_IFACE, in_signature='ssssay', out_signature='o')
def AddGattCharacteristic(self, adapter_device_name, address, service_uuid, char_uuid, value):
    '''Adds a primary GattService1 (one per UUID) and a readable GattCharacteristic1 under the device.'''
    dpath, device = _device(adapter_device_name, address)
    spath = None
    for p, o in mockobject.objects.items():
        if p.startswith(dpath + '/') and GATT_SERVICE_IFACE in o.props and \
                str(o.props[GATT_SERVICE_IFACE]['UUID']) == service_uuid:
            spath = p
    if spath is None:
        device.gatt_handle += 1
        spath = f'{dpath}/service{device.gatt_handle:04x}'
        sprops = {
            'UUID': dbus.String(service_uuid, variant_level=1),
            'Device': dbus.ObjectPath(dpath, variant_level=1),
            'Primary': dbus.Boolean(True, variant_level=1),
            'Includes': dbus.Array([], signature='o', variant_level=1),
        }
        self.AddObject(spath, GATT_SERVICE_IFACE, sprops, [])
        self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                        [dbus.ObjectPath(spath), {GATT_SERVICE_IFACE: sprops}])
    device.gatt_handle += 1
    cpath = f'{spath}/char{device.gatt_handle:04x}'
    cprops = {
        'UUID': dbus.String(char_uuid, variant_level=1),
        'Service': dbus.ObjectPath(spath, variant_level=1),
        'Value': dbus.Array(value, signature='y', variant_level=1),
        'Flags': dbus.Array(['read'], signature='s', variant_level=1),
    }
    self.AddObject(cpath, GATT_CHAR_IFACE, cprops, [])
    char = mockobject.objects[cpath]
    char.device_path = dpath
    _install(char, GATT_CHAR_IFACE, 'ReadValue', ReadValue)
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                    [dbus.ObjectPath(cpath), {GATT_CHAR_IFACE: cprops}])
    return cpath


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='a(soa{sv})')
def GetAdvertisements(_self, adapter_device_name):
    '''(client unique name, advertisement path, LEAdvertisement1 properties read at registration).'''
    adapter = _adapter(adapter_device_name)
    return dbus.Array([dbus.Struct((s, dbus.ObjectPath(p), dbus.Dictionary(props, signature='sv')))
                       for (s, p), props in adapter.advertisements.items()], signature='(soa{sv})')


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='a(soa{oa{sa{sv}}})')
def GetApplications(_self, adapter_device_name):
    '''(client unique name, application path, its managed objects read at registration).'''
    adapter = _adapter(adapter_device_name)
    return dbus.Array([dbus.Struct((s, dbus.ObjectPath(p), objs))
                       for (s, p), objs in adapter.applications.items()], signature='(soa{oa{sa{sv}}})')


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u')
def GetTxPowerWrites(_self, adapter_device_name):
    '''How many times the fake bluetoothd wrote TxPower back (one per refresh).'''
    return dbus.UInt32(getattr(_adapter(adapter_device_name), 'tx_power_writes', 0))


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u')
def GetMaxRefreshQueue(_self, adapter_device_name):
    '''The most refreshes that were waiting at once (with refresh_delay_ms), the one being carried out included.'''
    return dbus.UInt32(getattr(_adapter(adapter_device_name), 'max_refresh_queue', 0))


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u')
def GetRefreshErrors(_self, adapter_device_name):
    '''Refreshes that a property change started and the kernel would refuse (MinInterval > MaxInterval).'''
    return dbus.UInt32(getattr(_adapter(adapter_device_name), 'refresh_errors', 0))


@dbus.service.method(MOCK_IFACE, in_signature='so', out_signature='aa(qay)')
def GetAdvertisementHistory(_self, adapter_device_name, path):
    '''Every ManufacturerData the advertisement at `path` (any client) carried, in order: the one read at
    registration, then each applied from a PropertiesChanged. Empty when it is not registered.'''
    adapter = _adapter(adapter_device_name)
    for (_sender, p), history in adapter.adv_history.items():
        if p == str(path) and (_sender, p) in adapter.advertisements:
            return dbus.Array(history, signature='a(qay)')
    return dbus.Array([], signature='a(qay)')


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='aay')
def GetRegisteredData(_self, adapter_device_name):
    '''The manufacturer data of every advertisement registered on the adapter, in order, also of those
    withdrawn since (the beacon's extended-frame probe among them).'''
    adapter = _adapter(adapter_device_name)
    return dbus.Array([dbus.ByteArray(d) for d in adapter.registered_data], signature='ay')


@dbus.service.method(MOCK_IFACE, in_signature='ssqayn', out_signature='o')
def AddAdvertisingDevice(self, adapter_device_name, address, company, data, rssi):
    '''A device discovery has just found: InterfacesAdded carrying its ManufacturerData and RSSI (as bluetoothd
    announces a new address, e.g. a broadcaster's new non-resolvable private address).'''
    adapter_path = '/org/bluez/' + adapter_device_name
    _adapter(adapter_device_name)
    path = f"{adapter_path}/dev_{address.replace(':', '_').upper()}"
    props = {
        'Address': dbus.String(address, variant_level=1),
        'AddressType': dbus.String('random', variant_level=1),
        'Adapter': dbus.ObjectPath(adapter_path, variant_level=1),
        'Paired': dbus.Boolean(False, variant_level=1),
        'Connected': dbus.Boolean(False, variant_level=1),
        'ServicesResolved': dbus.Boolean(False, variant_level=1),
        'RSSI': dbus.Int16(rssi, variant_level=1),
        'ManufacturerData': dbus.Dictionary({dbus.UInt16(company): dbus.Array(data, signature='y', variant_level=1)},
                                            signature='qv', variant_level=1),
    }
    self.AddObject(path, DEVICE_IFACE, props, [])
    device = mockobject.objects[path]
    device.connected = False
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}', [dbus.ObjectPath(path), {DEVICE_IFACE: props}])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='ss', out_signature='')
def SetRegisterAdvertisementError(_self, adapter_device_name, error_name):
    '''Makes every RegisterAdvertisement fail with org.bluez.Error.<error_name> ("" to stop).'''
    adapter = _adapter(adapter_device_name)
    adapter.forced_register_error = (str(error_name), 'Forced by test') if error_name else None


@dbus.service.method(MOCK_IFACE, in_signature='su', out_signature='')
def SetRegisterAdvertisementDelay(_self, adapter_device_name, delay_ms):
    '''Carries out (and answers) every later RegisterAdvertisement after delay_ms (0: at once).'''
    _adapter(adapter_device_name).register_delay_ms = int(delay_ms)


@dbus.service.method(MOCK_IFACE, in_signature='b', out_signature='')
def SetTxPowerWriteBack(_self, on):
    '''Starts or stops writing TxPower back after each refresh from now on (a controller that stops
    reporting its power, a refresh whose write is lost).'''
    _params['tx_power_write_back'] = bool(on)


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u')
def GetWithdrawnInFlight(_self, adapter_device_name):
    '''UnregisterAdvertisement calls for a registration still being carried out (what crashes 5.82).'''
    return dbus.UInt32(_adapter(adapter_device_name).withdrawn_in_flight)


@dbus.service.method(MOCK_IFACE, in_signature='ssub', out_signature='')
def SetRegisterApplicationFailures(_self, adapter_device_name, error_name, count, register_anyway):
    '''Makes the next `count` RegisterApplication calls fail with org.bluez.Error.<error_name>; with
    `register_anyway` each is registered first, so that the caller's next try finds its path taken.'''
    adapter = _adapter(adapter_device_name)
    adapter.forced_app_failures = (str(error_name), int(count), bool(register_anyway))


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u', async_callbacks=('ok', 'err'))
def ReleaseAdvertisements(_self, adapter_device_name, ok=None, err=None):
    '''Like bluetoothd dropping advertisements (adapter reset): calls Release on each, forgets them.'''
    adapter = _adapter(adapter_device_name)
    ads = list(adapter.advertisements.keys())
    for key in ads:
        _forget_advertisement(adapter, key)
    _update_instances(adapter)
    if not ads:
        ok(dbus.UInt32(0))
        return
    pending = [len(ads)]

    def done(*_args):
        pending[0] -= 1
        if pending[0] == 0:
            ok(dbus.UInt32(len(ads)))
    for sender, path in ads:
        adapter.connection.call_async(sender, path, ADV_IFACE, 'Release', '', (), done, done, timeout=10)


@dbus.service.method(MOCK_IFACE, in_signature='sss', out_signature='ay', async_callbacks=('ok', 'err'))
def ReadApplicationValue(_self, adapter_device_name, service_uuid, char_uuid, ok=None, err=None):
    '''Calls ReadValue on the registered application's characteristic (as a remote central would).'''
    adapter = _adapter(adapter_device_name)
    for (sender, _app), objects in adapter.applications.items():
        services = {str(p) for p, i in objects.items()
                    if GATT_SERVICE_IFACE in i and str(i[GATT_SERVICE_IFACE]['UUID']).lower() == service_uuid.lower()}
        for p, i in objects.items():
            c = i.get(GATT_CHAR_IFACE)
            if c is not None and str(c['UUID']).lower() == char_uuid.lower() and str(c['Service']) in services:
                adapter.connection.call_async(
                    sender, p, GATT_CHAR_IFACE, 'ReadValue', 'a{sv}', ({},),
                    lambda v: ok(dbus.Array(v, signature='y')),
                    lambda e: err(_error('Failed', f'ReadValue failed: {e}')), timeout=10)
                return
    err(_error('DoesNotExist', 'No registered characteristic with that UUID'))


def load(mock, parameters):
    _params.clear()
    _params.update(parameters or {})
    stock.load(mock, parameters)
