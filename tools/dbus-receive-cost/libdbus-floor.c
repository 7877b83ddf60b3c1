// libdbus alone: demarshal + validate one BlueZ-shaped PropertiesChanged (288 bytes), no I/O.
// Built and run by tools/dbus-receive-cost.sh as a floor for the receive path.
#include <dbus/dbus.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
static double now(){struct timespec t;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int n = argc>1?atoi(argv[1]):100000;
  DBusMessage*m=dbus_message_new_signal("/org/bluez/hci0/dev_AA_BB_CC_DD_00_01","org.freedesktop.DBus.Properties","PropertiesChanged");
  dbus_message_set_sender(m, ":1.5");
  DBusMessageIter it,d,e,v,d2,e2,v2,a;
  dbus_message_iter_init_append(m,&it);
  const char*iface="org.bluez.Device1"; dbus_message_iter_append_basic(&it,DBUS_TYPE_STRING,&iface);
  dbus_message_iter_open_container(&it,DBUS_TYPE_ARRAY,"{sv}",&d);
   dbus_message_iter_open_container(&d,DBUS_TYPE_DICT_ENTRY,NULL,&e);
   const char*k="RSSI";dbus_message_iter_append_basic(&e,DBUS_TYPE_STRING,&k);
   dbus_message_iter_open_container(&e,DBUS_TYPE_VARIANT,"n",&v); dbus_int16_t r=-40; dbus_message_iter_append_basic(&v,DBUS_TYPE_INT16,&r); dbus_message_iter_close_container(&e,&v);
   dbus_message_iter_close_container(&d,&e);
   dbus_message_iter_open_container(&d,DBUS_TYPE_DICT_ENTRY,NULL,&e);
   k="ManufacturerData";dbus_message_iter_append_basic(&e,DBUS_TYPE_STRING,&k);
   dbus_message_iter_open_container(&e,DBUS_TYPE_VARIANT,"a{qv}",&v);
    dbus_message_iter_open_container(&v,DBUS_TYPE_ARRAY,"{qv}",&d2);
     dbus_message_iter_open_container(&d2,DBUS_TYPE_DICT_ENTRY,NULL,&e2);
     dbus_uint16_t c=0xffff; dbus_message_iter_append_basic(&e2,DBUS_TYPE_UINT16,&c);
     dbus_message_iter_open_container(&e2,DBUS_TYPE_VARIANT,"ay",&v2);
      dbus_message_iter_open_container(&v2,DBUS_TYPE_ARRAY,"y",&a); unsigned char buf[24]={1,2,3}; const unsigned char*bp=buf; dbus_message_iter_append_fixed_array(&a,DBUS_TYPE_BYTE,&bp,24); dbus_message_iter_close_container(&v2,&a);
     dbus_message_iter_close_container(&e2,&v2);
     dbus_message_iter_close_container(&d2,&e2);
    dbus_message_iter_close_container(&v,&d2);
   dbus_message_iter_close_container(&e,&v);
   dbus_message_iter_close_container(&d,&e);
  dbus_message_iter_close_container(&it,&d);
  dbus_message_iter_open_container(&it,DBUS_TYPE_ARRAY,"s",&a); dbus_message_iter_close_container(&it,&a);
  dbus_message_set_serial(m, 5);
  char*blob;int len; dbus_message_marshal(m,&blob,&len);
  printf("message %d bytes\n",len);
  double t0=now();
  for(int i=0;i<n;i++){ DBusError err; dbus_error_init(&err); DBusMessage*x=dbus_message_demarshal(blob,len,&err); if(!x){printf("fail\n");return 1;} dbus_message_unref(x);}
  double t1=now();
  printf("demarshal+validate: %.0f ns/message\n",(t1-t0)/n*1e9);
  return 0;
}
